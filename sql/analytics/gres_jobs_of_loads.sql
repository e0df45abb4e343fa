-- The jobs (cluster, scontrol's JobId = sacct's JobIDRaw) each per-job GPU index map load names
-- with GPU indices (raw.slurm_job_gres rows gres_holdings can match), distinct per load: every
-- load ($all) or the loads $ids. pipelines.analytics.incremental: the plan takes the days of
-- these jobs' attempts for a load new or deleted since the last build (GRES_JOBS_TABLE keeps
-- them per load, so that a deleted load's jobs are still known).
SELECT DISTINCT ingest_id, cluster, job_id
FROM raw.slurm_job_gres
WHERE ($all OR list_contains($ids, ingest_id)) AND gpu_indices IS NOT NULL
ORDER BY ingest_id, cluster, job_id
