-- jobs: one row per allocation attempt, Slurm and Kubernetes (see sql/README.md).
CREATE OR REPLACE VIEW jobs AS
SELECT source, cluster, job_id, job_id_raw, attempt, team, account, user_name, partition, qos,
       state, gpus, req_gpus, gpu_type, submit_at, eligible_at, start_at, end_at,
       wait_s, submit_wait_s, run_s, gpu_s, node_list, timelimit_s, exit_code, as_of
FROM core.jobs LEFT JOIN core.build_cutoffs USING (cluster);
