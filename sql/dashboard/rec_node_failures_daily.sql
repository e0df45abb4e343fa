-- rec_node_failures_daily: evidence of a lemon-node finding. Per UTC day in [$start, $end), the
-- attempts that ran on $host of $cluster (by start day) and those that ended NODE_FAIL.
SELECT date_trunc('day', start_at) AS day, count(*) AS attempts,
       count(*) FILTER (WHERE state = 'NODE_FAIL') AS node_fail_attempts
FROM jobs
WHERE cluster = $cluster AND list_contains(node_list, $host) AND start_at >= $start AND start_at < $end
GROUP BY 1
ORDER BY 1
