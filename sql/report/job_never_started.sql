-- Rows of one job ($job_id = JobID or JobIDRaw; $cluster NULL = any) that never started.
SELECT cluster, job_id, state, req_gpus, submit_at, eligible_at, end_at, reason
FROM slurm_jobs
WHERE start_at IS NULL AND step IS NULL
  AND (job_id = $job_id OR job_id_raw = $job_id)
  AND (CAST($cluster AS VARCHAR) IS NULL OR cluster = $cluster)
ORDER BY cluster, submit_at;
