-- The pod days (sql/analytics/create_pod_days.sql) of the raw.dcgm_samples loads $ids, new
-- since the last build, added to analytics.build_pod_days.
INSERT INTO analytics.build_pod_days
SELECT ingest_id, cluster, namespace, pod, min(ts) AS lo, max(ts) AS hi
FROM raw.dcgm_samples
WHERE pod IS NOT NULL AND list_contains($ids, ingest_id)
GROUP BY ingest_id, cluster, namespace, pod, CAST(timezone('UTC', ts) AS DATE)
ORDER BY ingest_id, cluster, namespace, pod, lo
