-- The never-started allocations of the stored resolution (core.slurm_jobs) of one part of the
-- identities (the range of analytics/stored_part_attempts.sql): the columns of
-- pipelines.core.StoredPart.pending (with the array's id, task and throttle, which
-- pipelines.core.build._throttled reads, and the shards ReqTRES names, which
-- pipelines.core.gpu_shards.pending_shard_gpus reads), req_gpus falling back to gpus, sorted
-- as the resolution sorts its rows.
SELECT
    cluster, source, job_id, partition, team, coalesce(req_gpus, gpus) AS req_gpus, submit_at,
    eligible_at, end_at, state, array_job_id, array_task_id, array_throttle, req_shards
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
    AND is_allocation AND start_at IS NULL
ORDER BY cluster NULLS LAST, job_key NULLS LAST, start_at NULLS LAST, step NULLS LAST
