-- The hourly per-GPU aggregates of one cluster $c with $lo <= hour < $hi that an incremental
-- build's window reads (pipelines.analytics.windows.telemetry_window): only the rows and columns
-- its two readers take, analytics/dcgm_hourly_labelled.sql and analytics/dcgm_hourly_activity.sql
-- (a labelled row with samples: hpc_job, samples, hour, gr_engine_active_avg). The GPU's uuid,
-- host and index, its memory and XID figures and the load's id are read by neither, and an
-- unlabelled hour (an idle GPU) counts in neither.
SELECT cluster, hour, hpc_job, samples, gr_engine_active_avg
FROM raw.dcgm_hourly
WHERE cluster = $c AND hour >= $lo AND hour < $hi AND hpc_job IS NOT NULL AND samples > 0
