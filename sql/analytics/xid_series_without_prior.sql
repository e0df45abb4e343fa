-- The GPUs ($lo: the start of an incremental build's window) of the last-XID series
-- (DCGM_FI_DEV_XID_ERRORS per cluster, host, GPU and MIG instance) in a window's samples
-- (pipelines.analytics.windows.telemetry_window) with no valued sample before $lo: their first
-- samples from $lo on are compared (sql/analytics/xid_events.sql, dcgm_gpu_buckets.sql) with
-- samples older than the window's margin, which the window must fetch (xid_samples_before.sql).
SELECT DISTINCT gpu_uuid
FROM raw.dcgm_samples
WHERE metric = 'DCGM_FI_DEV_XID_ERRORS' AND gpu_uuid IS NOT NULL
GROUP BY cluster, host, gpu_uuid, mig_instance
HAVING count(value) FILTER (WHERE ts < $lo) = 0
