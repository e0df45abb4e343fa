-- The longest waits of started GPU attempts eligible in [$start, $end), longest first.
SELECT cluster, job_id, attempt, team, user_name, gpus, wait_s, state
FROM jobs
WHERE gpus > 0 AND wait_s IS NOT NULL AND eligible_at >= $start AND eligible_at < $end
ORDER BY wait_s DESC, cluster, job_id, attempt
LIMIT $limit;
