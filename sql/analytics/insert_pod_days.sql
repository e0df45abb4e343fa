-- Per load of raw.dcgm_samples (every load: $all; else the loads $ids, new since the last build),
-- cluster, pod and UTC day, the first and last time of its samples labelled with that pod, added
-- to analytics.build_pod_days (pipelines.analytics.incremental.POD_DAYS_TABLE): what the plan
-- reads for the days of a pod's stored samples, instead of a pass over every sample
-- (sql/analytics/pod_sample_days.sql).
INSERT INTO analytics.build_pod_days
SELECT ingest_id, cluster, namespace, pod, min(ts) AS lo, max(ts) AS hi
FROM raw.dcgm_samples
WHERE pod IS NOT NULL AND ($all OR list_contains($ids, ingest_id))
GROUP BY ingest_id, cluster, namespace, pod, CAST(timezone('UTC', ts) AS DATE)
ORDER BY ingest_id, cluster, namespace, pod, lo
