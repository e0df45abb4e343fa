-- Allocated GPU-hours per team, GPU type and end state (each attempt's pieces of held GPUs, job_holds, clipped to the filter window).
SELECT j.team,
       coalesce(j.gpu_type, 'untyped') AS gpu_type,
       CASE
           WHEN j.end_at IS NULL OR j.end_at > j.as_of THEN 'running'
           WHEN j.state IN ('COMPLETED', 'RUNNING', 'SUSPENDED') THEN 'completed'
           WHEN j.state IN ('NODE_FAIL', 'BOOT_FAIL') THEN 'node failure'
           WHEN j.state IN ('FAILED', 'OUT_OF_MEMORY') THEN 'failed'
           WHEN j.state IN ('PREEMPTED', 'REQUEUED') THEN 'preempted'
           WHEN j.state IN ('TIMEOUT', 'DEADLINE') THEN 'timeout'
           WHEN j.state IN ('CANCELLED', 'REVOKED') THEN 'cancelled'
           ELSE 'other'
       END AS end_state,
       count(DISTINCT (j.cluster, j.job_id, j.attempt)) AS attempts,
       sum(h.gpus * greatest(0, epoch(least(coalesce(h.end_at, j.as_of), j.as_of, $end))
                                - epoch(greatest(h.start_at, $start)))) / 3600.0 AS gpu_h
FROM jobs j
JOIN job_holds h ON h.cluster = j.cluster AND h.job_id = j.job_id AND h.attempt = j.attempt
WHERE j.gpus > 0 AND h.gpus > 0
  AND ($cluster IS NULL OR j.cluster = $cluster) AND ($team IS NULL OR j.team = $team)
  AND h.start_at < $end AND coalesce(h.end_at, j.as_of) > $start
GROUP BY ALL
ORDER BY team, gpu_type, end_state;
