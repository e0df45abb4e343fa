-- The stored resolution (core.slurm_jobs) of the identities of one part's range of (cluster, job
-- key) sort keys [$lo, $hi) ($last: no upper end; see analytics/slurm_jobs_in_range.sql), only
-- the columns the core layer reads from a part (pipelines.core.RESOLVED_PART_COLUMNS, in its
-- order): a narrow read, whose buffers the attempts keep, instead of every column's.
SELECT
    source, cluster, job_id, job_id_raw, attempt, team, account, user_name, partition, qos,
    state, gpus, req_gpus, gpu_type, submit_at, eligible_at, start_at, end_at, wait_s,
    submit_wait_s, run_s, gpu_s, node_list, timelimit_s, exit_code, job_key, extra,
    is_allocation, step
FROM core.slurm_jobs
WHERE coalesce(cluster, '') || chr(0) || coalesce(job_key, '') >= $lo
    AND ($last OR coalesce(cluster, '') || chr(0) || coalesce(job_key, '') < $hi)
