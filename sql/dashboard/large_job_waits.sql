-- Waits (seconds) of started attempts with at least $min_gpus GPUs.
SELECT source, cluster, job_id, gpus, wait_s FROM jobs
WHERE gpus >= $min_gpus AND wait_s IS NOT NULL;
