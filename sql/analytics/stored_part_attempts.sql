-- The started allocations (the core layer's Slurm attempts) of the stored resolution
-- (core.slurm_jobs) of one part of the identities: (cluster, job key) from ($lo_cluster,
-- $lo_job_key) inclusive to ($hi_cluster, $hi_job_key) exclusive ($last: no upper end), the
-- order of the sort key of analytics/create_slurm_rows_keyed.sql. The columns of
-- pipelines.core.StoredPart.attempts and step, in the table's own order: no ORDER BY (0.8 s of
-- a 1.6 s read of the year's attempts). A full build writes the table a part at a time, each
-- part in the resolution's order, so every read then comes in that order; each incremental
-- build appends the rows of the identities it changed at the end, so more reads come out of
-- order as builds follow one another. The caller checks the order, sorts where it is not the
-- resolution's (pipelines.core.in_resolution_order, whose order names step: NULL on every
-- attempt, an allocation row) and drops step.
SELECT
    source, cluster, job_id, job_id_raw, attempt, team, account, user_name, partition, qos,
    state, gpus, req_gpus, gpu_type, submit_at, eligible_at, start_at, end_at, wait_s,
    submit_wait_s, run_s, gpu_s, node_list, timelimit_s, exit_code, job_key, extra, shards,
    req_shards, end_inferred, elapsed_s, step
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
    AND is_allocation AND start_at IS NOT NULL
