-- rec_preempted_runs: evidence of a preemption finding. GPU attempts of $cluster (and QOS $qos, when
-- given) that ended PREEMPTED after starting in [$start, $end), counted per 10-minute bin of their
-- run before preemption (minutes, bin start), with their GPU-hours.
SELECT floor(run_s / 600) * 10 AS run_min, count(*) AS attempts, sum(gpu_s) / 3600 AS gpu_h
FROM jobs
WHERE cluster = $cluster AND ($qos IS NULL OR qos = $qos) AND state = 'PREEMPTED' AND gpus > 0
  AND run_s IS NOT NULL AND start_at >= $start AND start_at < $end
GROUP BY 1
ORDER BY 1
