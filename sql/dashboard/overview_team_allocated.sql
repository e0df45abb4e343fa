-- Allocated GPU-hours per team in the filter window: each piece of GPUs an attempt held (job_holds) × its part of [start, end or as_of) inside it.
WITH held AS (
    SELECT j.team, j.cluster, j.job_id, j.attempt, j.start_at,
           h.gpus * greatest(0, epoch(least(coalesce(h.end_at, j.as_of), j.as_of, $end)
                                      - greatest(h.start_at, $start))) AS gpu_s
    FROM jobs j
    JOIN job_holds h ON h.cluster = j.cluster AND h.job_id = j.job_id AND h.attempt = j.attempt
    WHERE j.start_at IS NOT NULL AND j.gpus > 0 AND h.gpus > 0
      AND h.start_at < $end AND coalesce(h.end_at, j.as_of) > $start
      AND ($cluster IS NULL OR j.cluster = $cluster)
)
SELECT team,
       sum(gpu_s) / 3600.0 AS allocated_gpu_h,
       count(DISTINCT (cluster, job_id, attempt))
           FILTER (WHERE start_at >= $start AND start_at < $end) AS attempts
FROM held
GROUP BY team
ORDER BY team;
