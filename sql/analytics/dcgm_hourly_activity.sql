-- Sample-weighted mean GR_ENGINE_ACTIVE per cluster, hpc_job label and hour of raw.dcgm_hourly,
-- with the number of GPU rows seen (one row per GPU, hour and label): the hours in [$lo, $hi)
-- of cluster $cluster (NULL: every cluster).
SELECT cluster, hpc_job AS job_id, hour AS bucket,
    sum(samples * gr_engine_active_avg) / sum(samples) AS activity,
    count(*)::DOUBLE AS gpus
FROM raw.dcgm_hourly
WHERE hpc_job IS NOT NULL AND samples > 0 AND hour >= $lo AND hour < $hi
    AND ($cluster IS NULL OR cluster = $cluster)
GROUP BY ALL
