-- Allocated-idle GPU-hours per cluster, team and GPU type (leaf 8, allocated_idle), from `gpu_activity`.
-- Counted as the waterfall counts the leaf (METRICS.md, "Metric engine choices", allocated_idle):
-- rows attributed to one attempt (`label_hpc_job`, `pod`, `gres_index`, `whole_node`) give the
-- attempt's activity per 5-minute bucket (GPU-fraction-weighted mean; a MIG slice weighs K/7);
-- observed GPUs = min(Σ fractions seen, GPUs allocated); time = the part of the bucket inside
-- [start, min(end, as_of)) and inside the date filter; the bucket is idle when activity < $theta.
-- Attempts in a loss leaf (3-7; end state = first word of `state`) are left out, as under the
-- default `whole_attempt` policy; running attempts count up to `as_of`. GPU type NULL = 'untyped'.
WITH per_bucket AS (
    SELECT cluster, job_id, attempt, bucket,
           sum(activity * gpus) / sum(gpus) AS activity,
           sum(gpus) AS seen_gpus
    FROM gpu_activity
    WHERE attribution IN ('label_hpc_job', 'pod', 'gres_index', 'whole_node')
      AND attempt IS NOT NULL AND activity IS NOT NULL
      AND ($cluster IS NULL OR cluster = $cluster)
      AND bucket < $end AND bucket + INTERVAL 5 MINUTE > $start
    GROUP BY ALL
), attempts AS (
    SELECT cluster, job_id, attempt, team, coalesce(gpu_type, 'untyped') AS gpu_type, gpus,
           start_at, least(coalesce(end_at, as_of), as_of) AS stop_at
    FROM jobs
    WHERE gpus > 0
      AND ($cluster IS NULL OR cluster = $cluster)
      AND ($team IS NULL OR team = $team)
      AND ($gpu_type IS NULL OR coalesce(gpu_type, 'untyped') = $gpu_type)
      AND (end_at IS NULL OR end_at > as_of
           OR upper(split_part(state, ' ', 1))
              NOT IN ('NODE_FAIL', 'BOOT_FAIL', 'FAILED', 'OUT_OF_MEMORY', 'PREEMPTED',
                      'REQUEUED', 'TIMEOUT', 'DEADLINE', 'CANCELLED', 'REVOKED'))
)
SELECT a.cluster, a.team, a.gpu_type,
       sum(least(b.seen_gpus, a.gpus)
           * greatest(0, epoch(least(b.bucket + INTERVAL 5 MINUTE, a.stop_at, $end))
                         - epoch(greatest(b.bucket, a.start_at, $start)))) / 3600.0 AS idle_gpu_h,
       count(DISTINCT (a.job_id, a.attempt)) AS attempts
FROM per_bucket b
JOIN attempts a ON a.cluster = b.cluster AND a.job_id = b.job_id AND a.attempt = b.attempt
WHERE b.activity < $theta
GROUP BY ALL
HAVING sum(least(b.seen_gpus, a.gpus)
           * greatest(0, epoch(least(b.bucket + INTERVAL 5 MINUTE, a.stop_at, $end))
                         - epoch(greatest(b.bucket, a.start_at, $start)))) > 0
ORDER BY idle_gpu_h DESC, a.cluster, a.team, a.gpu_type;
