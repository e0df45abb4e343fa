-- Allocated GPU-hours per team, GPU type and end state (whole attempts, clipped to the filter window).
SELECT team,
       coalesce(gpu_type, 'untyped') AS gpu_type,
       CASE
           WHEN end_at IS NULL OR end_at > as_of THEN 'running'
           WHEN state IN ('COMPLETED', 'RUNNING', 'SUSPENDED') THEN 'completed'
           WHEN state IN ('NODE_FAIL', 'BOOT_FAIL') THEN 'node failure'
           WHEN state IN ('FAILED', 'OUT_OF_MEMORY') THEN 'failed'
           WHEN state IN ('PREEMPTED', 'REQUEUED') THEN 'preempted'
           WHEN state IN ('TIMEOUT', 'DEADLINE') THEN 'timeout'
           WHEN state IN ('CANCELLED', 'REVOKED') THEN 'cancelled'
           ELSE 'other'
       END AS end_state,
       count(*) AS attempts,
       sum(gpus * greatest(0, epoch(least(coalesce(end_at, as_of), as_of, $end))
                              - epoch(greatest(start_at, $start)))) / 3600.0 AS gpu_h
FROM jobs
WHERE gpus > 0
  AND ($cluster IS NULL OR cluster = $cluster) AND ($team IS NULL OR team = $team)
  AND start_at < $end AND coalesce(end_at, as_of) > $start
GROUP BY ALL
ORDER BY team, gpu_type, end_state;
