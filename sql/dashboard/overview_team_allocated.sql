-- Allocated GPU-hours per team in the filter window: GPUs × the part of [start, end or as_of) inside it (running attempts up to as_of).
SELECT team,
       sum(gpus * greatest(0, epoch(least(coalesce(end_at, as_of), as_of, $end)
                                     - greatest(start_at, $start)))) / 3600.0 AS allocated_gpu_h,
       count(*) FILTER (WHERE start_at >= $start AND start_at < $end) AS attempts
FROM jobs
WHERE start_at IS NOT NULL AND gpus > 0 AND start_at < $end
  AND coalesce(end_at, as_of) > $start
  AND ($cluster IS NULL OR cluster = $cluster)
GROUP BY team
ORDER BY team;
