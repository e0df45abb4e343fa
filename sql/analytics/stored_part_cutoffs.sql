-- Per cluster, the latest submit, eligible, start and end time of every row (steps too) of the
-- stored resolution (core.slurm_jobs) of one part of the identities (the range of
-- analytics/stored_part_attempts.sql): pipelines.core.StoredPart.cuts.
SELECT
    cluster,
    max(submit_at) AS submit_at,
    max(eligible_at) AS eligible_at,
    max(start_at) AS start_at,
    max(end_at) AS end_at
FROM core.slurm_jobs
WHERE (coalesce(cluster, ''), coalesce(job_key, '')) >= ($lo_cluster, $lo_job_key)
    AND ($last OR (coalesce(cluster, ''), coalesce(job_key, '')) < ($hi_cluster, $hi_job_key))
GROUP BY cluster
ORDER BY cluster
