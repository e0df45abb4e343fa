-- Waiting spells of jobs with >= $min_gpus GPUs eligible in the $days days before the cut-off.
SELECT cluster, size_gpus, wait_s AS duration_s, started
FROM time_to_start_jobs
WHERE size_gpus >= $min_gpus AND eligible_at >= as_of - to_days(CAST($days AS INTEGER))
ORDER BY cluster;
