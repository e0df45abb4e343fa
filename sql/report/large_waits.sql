-- Waiting spells (censored ones included) of jobs with >= $min_gpus GPUs eligible in [$start, $end).
SELECT source, cluster, job_id, attempt, size_gpus, wait_s AS duration_s, started
FROM time_to_start_jobs
WHERE size_gpus >= $min_gpus AND eligible_at >= $start AND eligible_at < $end
ORDER BY cluster, job_id, attempt;
