-- jobs_in_window: allocation attempts that overlap [$start, ∞) (the recommendation window).
SELECT source, cluster, job_id, attempt, team, account, user_name, partition, qos, state,
       gpus, req_gpus, submit_at, eligible_at, start_at, end_at, wait_s, run_s, gpu_s,
       node_list, timelimit_s
FROM jobs
WHERE coalesce(end_at, as_of, start_at) >= $start
