-- The XIDs that the 5-minute samples of GPUs $gpus of clusters $cs read, per cluster, GPU, UTC
-- hour and value: a DCGM_FI_DEV_XID_ERRORS sample holding the value, or a
-- DCGM_EXP_XID_ERRORS_COUNT sample above 0 of that code (its xid label). Their events stand for
-- an hourly aggregate's XID of the same GPU, hour and value, which is then not counted again
-- (pipelines.analytics.metrics_build._hourly_xid_events).
SELECT DISTINCT cluster, gpu_uuid,
    timezone('UTC', date_trunc('hour', timezone('UTC', ts))) AS hour,
    CAST(CASE WHEN metric = 'DCGM_FI_DEV_XID_ERRORS' THEN value ELSE xid END AS BIGINT) AS xid
FROM raw.dcgm_samples
WHERE metric IN ('DCGM_FI_DEV_XID_ERRORS', 'DCGM_EXP_XID_ERRORS_COUNT')
    AND list_contains($cs, cluster) AND list_contains($gpus, gpu_uuid) AND value > 0
    AND (metric = 'DCGM_FI_DEV_XID_ERRORS' OR xid IS NOT NULL)
