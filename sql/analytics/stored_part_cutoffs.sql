-- Per cluster, the latest submit, eligible, start and end time of every row (steps too) of the
-- stored resolution (core.slurm_jobs) of one part of the identities (the range of
-- analytics/stored_part_attempts.sql), and the latest start + Elapsed of a row without an end
-- (run_to: it had run that long when sacct was run, pipelines.core.build._run_to):
-- pipelines.core.StoredPart.cuts.
SELECT
    cluster,
    max(submit_at) AS submit_at,
    max(eligible_at) AS eligible_at,
    max(start_at) AS start_at,
    max(end_at) AS end_at,
    max(start_at + to_seconds(elapsed_s)) FILTER (WHERE end_at IS NULL) AS run_to
FROM core.slurm_jobs
WHERE (coalesce(cluster, ''), coalesce(job_key, '')) >= ($lo_cluster, $lo_job_key)
    AND ($last OR (coalesce(cluster, ''), coalesce(job_key, '')) < ($hi_cluster, $hi_job_key))
    -- The same range again in terms DuckDB pushes into the scan, so that its zone maps skip the
    -- row groups outside it (the parameters are folded first): implied by the two lines above,
    -- they change no row, only what is read (BENCHMARKS.md "Stored parts read as runs").
    AND ($lo_cluster = '' OR cluster >= $lo_cluster)
    AND ($last OR $lo_cluster = '' OR cluster <= $hi_cluster)
    AND ($last OR $lo_cluster = '' OR $lo_cluster <> $hi_cluster OR $lo_job_key = ''
        OR (job_key >= $lo_job_key AND job_key < $hi_job_key))
GROUP BY cluster
ORDER BY cluster
