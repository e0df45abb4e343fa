-- pending_jobs: Slurm allocations that never started (still pending, or cancelled while pending).
SELECT cluster, job_id, partition, qos, account, user_name, team, req_gpus, eligible_at,
       end_at AS cancel_at, timelimit_s, state
FROM slurm_jobs
WHERE is_allocation AND start_at IS NULL AND eligible_at IS NOT NULL
  AND (end_at IS NULL OR end_at >= $start)
