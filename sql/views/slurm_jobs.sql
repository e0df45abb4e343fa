-- slurm_jobs: every parsed Slurm row once (allocations, steps, pending rows), see sql/README.md.
CREATE OR REPLACE VIEW slurm_jobs AS
SELECT source, cluster, job_id, job_id_raw, job_key, attempt, team, account, user_name, partition,
       qos, state, state_raw, cancelled_by_uid, gpus, req_gpus, gpu_type, shards, req_shards,
       submit_at, eligible_at, start_at, end_at, end_inferred, wait_s, submit_wait_s, run_s,
       gpu_s, elapsed_s, timelimit_s, timelimit_note, array_job_id, array_task_id, array_throttle, het_job_id,
       het_job_offset, step, is_allocation, row_id, node_list, node_list_raw, nnodes, ncpus,
       exit_code, signal, alloc_tres, req_tres, req_mem_mb, req_mem_per, job_name, uid,
       group_name, reason, extra, parse_filename(file) AS file, line_no, line_end
FROM core.slurm_jobs;
