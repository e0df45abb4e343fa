-- large_job_wait_causes: large jobs eligible since $start, with their wait split into quota, priority, fragmentation and other (the gang_window and defrag_candidates rules' evidence).
SELECT cluster, job_id, attempt, team, req_gpus, req_nodes, eligible_at, start_at, wait_s, quota_s, priority_s,
       fragmentation_s, other_s, blocked_idle_gpu_s, basis
FROM large_job_wait_causes
WHERE eligible_at >= $start;
