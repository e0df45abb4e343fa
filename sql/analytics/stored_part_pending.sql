-- The never-started allocations of the stored resolution (core.slurm_jobs) of one part of the
-- identities (the range of analytics/stored_part_attempts.sql): the columns of
-- pipelines.core.StoredPart.pending, req_gpus falling back to gpus, sorted as the resolution
-- sorts its rows.
SELECT
    cluster, source, job_id, partition, team, coalesce(req_gpus, gpus) AS req_gpus, submit_at,
    eligible_at, end_at, state
FROM core.slurm_jobs
WHERE (coalesce(cluster, ''), coalesce(job_key, '')) >= ($lo_cluster, $lo_job_key)
    AND ($last OR (coalesce(cluster, ''), coalesce(job_key, '')) < ($hi_cluster, $hi_job_key))
    AND is_allocation AND start_at IS NULL
ORDER BY cluster NULLS LAST, job_key NULLS LAST, start_at NULLS LAST, step NULLS LAST
