-- Per load of raw.dcgm_samples (every load: $all; else the loads $ids, new since the last build),
-- cluster and host, its first and last sample time, added to analytics.build_dcgm_hosts
-- (pipelines.analytics.incremental.DCGM_HOSTS_TABLE): the exporter's own pod names (placed by
-- the pods' lives, not by name) left out. What sql/analytics/dcgm_hosts.sql reads, instead of a
-- pass over every sample.
INSERT INTO analytics.build_dcgm_hosts
SELECT ingest_id, cluster, host, min(ts) AS first_seen, max(ts) AS last_seen
FROM raw.dcgm_samples
WHERE host IS NOT NULL AND NOT coalesce(host_is_exporter_pod, false)
  AND ($all OR list_contains($ids, ingest_id))
GROUP BY ingest_id, cluster, host
ORDER BY ingest_id, cluster, host
