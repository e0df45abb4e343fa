-- Per cluster and UTC day, the first and last time of the stored DCGM samples whose pod is one
-- of the pods $clusters[i], $namespaces[i], $pods[i] (the lists zipped; a NULL matches nothing):
-- pipelines.analytics.incremental._map_pod_spans, for the pods that entered or left a slurmd map
-- (rehome_slurmd_dcgm clears such a pod's labels on every sample, in its map's intervals or not).
WITH pods AS (
    SELECT unnest($clusters) AS cluster, unnest($namespaces) AS namespace, unnest($pods) AS pod
)
SELECT s.cluster, min(s.ts) AS lo, max(s.ts) AS hi
FROM raw.dcgm_samples AS s
SEMI JOIN pods AS p
    ON s.cluster = p.cluster AND s.namespace = p.namespace AND s.pod = p.pod
WHERE list_contains($clusters, s.cluster)
GROUP BY s.cluster, CAST(timezone('UTC', s.ts) AS DATE)
ORDER BY s.cluster, lo
