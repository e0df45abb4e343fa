-- Per cluster and UTC day, the first and last time of the stored DCGM samples whose pod is one
-- of the pods $clusters[i], $namespaces[i], $pods[i] (the lists zipped; a NULL matches nothing),
-- from the loads' pod days the last build kept (analytics.build_pod_days: the loads new since
-- are planned on every day they cover anyway), not from the samples themselves.
-- pipelines.analytics.incremental: _map_pod_spans, for the pods that entered or left a slurmd
-- map (rehome_slurmd_dcgm clears such a pod's labels on every sample, in its map's intervals or
-- not), and _pod_sample_spans, for the pods whose lives or whose job's rows changed.
WITH pods AS (
    SELECT unnest($clusters) AS cluster, unnest($namespaces) AS namespace, unnest($pods) AS pod
)
SELECT d.cluster, min(d.lo) AS lo, max(d.hi) AS hi
FROM analytics.build_pod_days AS d
SEMI JOIN pods AS p
    ON d.cluster = p.cluster AND d.namespace = p.namespace AND d.pod = p.pod
WHERE list_contains($clusters, d.cluster)
GROUP BY d.cluster, CAST(timezone('UTC', d.lo) AS DATE)
ORDER BY d.cluster, lo
