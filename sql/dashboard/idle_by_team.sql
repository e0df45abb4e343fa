-- Allocated-idle GPU-hours per cluster, team and GPU type (leaf 8, allocated_idle), from `gpu_activity`.
-- Counted as the waterfall counts the leaf (METRICS.md, "Metric engine choices", allocated_idle):
-- rows attributed to one attempt (`label_hpc_job`, `pod`, `gres_index`, `whole_node`) give the
-- attempt's activity per 5-minute bucket (GPU-fraction-weighted mean; a MIG slice weighs K/7);
-- observed GPUs = min(Σ fractions seen, GPUs held by the piece of the attempt, job_holds); time =
-- the part of the bucket inside the piece [start, min(end, as_of)) and inside the date filter;
-- the bucket is idle when activity < $theta.
-- Under the loss policy (METRICS.md "Lost work under the `checkpoint` policy"): an attempt ended by
-- `as_of` in leaves 3-6 (end state = first word of `state`) keeps only its head, up to its end less
-- its lost min(runtime, cap) seconds (each piece cut there), where cap = Δ/2 + u0 of its cluster's `checkpoint` policy
-- ($loss_caps at the cluster's place in $loss_clusters, else $loss_cap_s; NULL = `whole_attempt`:
-- the attempt is left out); cancelled work (leaf 7) is always left out. Running attempts count up
-- to `as_of`. GPU type NULL = 'untyped'.
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
), ended AS (
    SELECT cluster, job_id, attempt, team, coalesce(gpu_type, 'untyped') AS gpu_type, as_of,
           start_at, least(coalesce(end_at, as_of), as_of) AS stop_at,
           CASE
               WHEN end_at IS NULL OR end_at > as_of THEN 'running'
               WHEN upper(split_part(state, ' ', 1))
                    IN ('NODE_FAIL', 'BOOT_FAIL', 'FAILED', 'OUT_OF_MEMORY', 'PREEMPTED',
                        'REQUEUED', 'TIMEOUT', 'DEADLINE') THEN 'lost'
               WHEN upper(split_part(state, ' ', 1)) IN ('CANCELLED', 'REVOKED') THEN 'cancelled'
               ELSE 'kept'
           END AS outcome,
           CASE
               WHEN list_contains(CAST($loss_clusters AS VARCHAR[]), cluster)
                   THEN CAST($loss_caps AS DOUBLE[])[
                       list_position(CAST($loss_clusters AS VARCHAR[]), cluster)]
               ELSE CAST($loss_cap_s AS DOUBLE)
           END AS loss_cap_s
    FROM jobs
    WHERE gpus > 0
      AND ($cluster IS NULL OR cluster = $cluster)
      AND ($team IS NULL OR team = $team)
      AND ($gpu_type IS NULL OR coalesce(gpu_type, 'untyped') = $gpu_type)
), kept AS (  -- where each attempt's kept time ends: a lost attempt's head, else its cut-off
    SELECT cluster, job_id, attempt, team, gpu_type, as_of,
           CASE WHEN outcome = 'lost' THEN stop_at - to_microseconds(CAST(round(
                    least(epoch(stop_at) - epoch(start_at), loss_cap_s) * 1e6) AS BIGINT))
                ELSE as_of END AS kept_to
    FROM ended
    WHERE outcome IN ('running', 'kept') OR (outcome = 'lost' AND loss_cap_s IS NOT NULL)
), attempts AS (  -- one row per piece of GPUs the attempt held (job_holds), as the waterfall
    SELECT k.cluster, k.job_id, k.attempt, k.team, k.gpu_type, h.gpus, h.start_at,
           least(coalesce(h.end_at, k.as_of), k.as_of, k.kept_to) AS stop_at
    FROM kept k
    JOIN job_holds h ON h.cluster = k.cluster AND h.job_id = k.job_id AND h.attempt = k.attempt
    WHERE h.gpus > 0
)
SELECT a.cluster, a.team, a.gpu_type,
       sum(least(b.seen_gpus, a.gpus)
           * greatest(0, epoch(least(b.bucket + INTERVAL 5 MINUTE, a.stop_at, $end))
                         - epoch(greatest(b.bucket, a.start_at, $start)))) / 3600.0 AS idle_gpu_h,
       count(DISTINCT (a.job_id, a.attempt)) AS attempts
FROM per_bucket b
JOIN attempts a ON a.cluster = b.cluster AND a.job_id = b.job_id AND a.attempt = b.attempt
WHERE b.activity < $theta AND b.bucket < a.stop_at
GROUP BY ALL
HAVING sum(least(b.seen_gpus, a.gpus)
           * greatest(0, epoch(least(b.bucket + INTERVAL 5 MINUTE, a.stop_at, $end))
                         - epoch(greatest(b.bucket, a.start_at, $start)))) > 0
ORDER BY idle_gpu_h DESC, a.cluster, a.team, a.gpu_type;
