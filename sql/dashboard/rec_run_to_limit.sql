-- rec_run_to_limit: evidence of a time-limit finding. Completed GPU attempts of $cluster/$partition
-- that started in [$start, $end), counted per 0.05-wide bin of run ÷ time limit (elapsed/limit).
SELECT least(floor(run_s / timelimit_s * 20) / 20, 1.0) AS run_to_limit,
       count(*) AS attempts
FROM jobs
WHERE cluster = $cluster AND partition = $partition AND state = 'COMPLETED' AND gpus > 0
  AND run_s IS NOT NULL AND timelimit_s > 0 AND start_at >= $start AND start_at < $end
GROUP BY 1
ORDER BY 1
