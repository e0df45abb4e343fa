-- Waits (seconds) of started attempts with at least $min_gpus GPUs, eligible in the filter window.
SELECT source, cluster, job_id, team, gpus, wait_s, coalesce(eligible_at, start_at) AS eligible_at
FROM jobs
WHERE gpus >= $min_gpus AND wait_s IS NOT NULL
  AND ($cluster IS NULL OR cluster = $cluster) AND ($team IS NULL OR team = $team)
  AND coalesce(eligible_at, start_at) >= $start AND coalesce(eligible_at, start_at) < $end;
