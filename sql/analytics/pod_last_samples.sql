-- Per namespace and pod of the cluster $cluster, the latest raw.dcgm_samples time labelled
-- with that pod, over its samples after $after only (the cluster's cut-off from its pods' own
-- times: an earlier sample cannot move it, and DuckDB skips the row groups before it).
-- pipelines.analytics.build._pod_last_samples, one read per Kubernetes cluster: the latest
-- sample of a pod still running moves its cluster's data cut-off (pipelines.core.build,
-- METRICS.md "as_of").
SELECT cluster, namespace, pod, max(ts) AS last_sample
FROM raw.dcgm_samples
WHERE cluster = $cluster AND pod IS NOT NULL AND ts > $after
GROUP BY cluster, namespace, pod
ORDER BY cluster, namespace, pod
