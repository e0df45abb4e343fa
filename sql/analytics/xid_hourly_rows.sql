-- The hourly DCGM aggregates' rows holding an XID (xid_last > 0: the rows without one, nearly
-- all, are never read) of cluster $cluster (NULL: every cluster) with $lo <= hour < $hi, one per
-- cluster, host, GPU, hour, value and job label (NULL: unlabelled), with the GPU's index on the
-- host: the input of the hourly XID rule (pipelines.analytics.metrics_build._hourly_xid_hours;
-- the index and the label name the attempts holding the GPU, for job_gpu_summary).
SELECT DISTINCT cluster, hostname AS host, uuid AS gpu_uuid, hour, xid_last AS xid,
    CAST(gpu AS BIGINT) AS gpu_index, hpc_job
FROM raw.dcgm_hourly
WHERE xid_last > 0 AND ($cluster IS NULL OR cluster = $cluster) AND hour >= $lo AND hour < $hi
