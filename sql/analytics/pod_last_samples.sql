-- Per cluster, namespace and pod, the latest raw.dcgm_samples time labelled with that pod, over
-- the samples after $after only (the earliest Kubernetes cluster's cut-off from its pods' own
-- times: an earlier sample cannot move a cut-off, and DuckDB skips the row groups before it).
-- pipelines.analytics.build._read_raw: the latest sample of a pod still running moves its
-- cluster's data cut-off (pipelines.core.build, METRICS.md "as_of").
SELECT cluster, namespace, pod, max(ts) AS last_sample
FROM raw.dcgm_samples
WHERE pod IS NOT NULL AND ts > $after
GROUP BY cluster, namespace, pod
ORDER BY cluster, namespace, pod
