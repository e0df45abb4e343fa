-- The stored resolution (core.slurm_jobs) of the identities of one part's range of (cluster, job
-- key) sort keys [$lo, $hi) ($last: no upper end): see analytics/slurm_jobs_in_range.sql.
SELECT * FROM core.slurm_jobs
WHERE coalesce(cluster, '') || chr(0) || coalesce(job_key, '') >= $lo
    AND ($last OR coalesce(cluster, '') || chr(0) || coalesce(job_key, '') < $hi)
