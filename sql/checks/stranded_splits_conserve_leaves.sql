-- Cluster-hours of the waterfall whose stranded_gpu_hourly parts do not sum to the idle and held leaves within 0.1 % of capacity, have a negative part, or have no row (METRICS.md).
WITH w AS (
    SELECT cluster, hour, any_value(capacity_gpu_s) AS capacity,
           coalesce(sum(gpu_s) FILTER (WHERE bucket = 'idle'), 0) AS idle,
           coalesce(sum(gpu_s) FILTER (WHERE bucket = 'held'), 0) AS held
    FROM analytics.gpu_waterfall_hourly
    GROUP BY cluster, hour
)
SELECT count(*)
FROM w LEFT JOIN stranded_gpu_hourly AS s USING (cluster, hour)
WHERE s.cluster IS NULL
   OR abs(s.idle_stranded_gpu_s + s.idle_other_gpu_s - w.idle) > 0.001 * greatest(w.capacity, 1)
   OR abs(s.held_for_gangs_gpu_s + s.held_other_gpu_s - w.held) > 0.001 * greatest(w.capacity, 1)
   OR least(s.idle_stranded_gpu_s, s.idle_other_gpu_s, s.held_for_gangs_gpu_s,
            s.held_other_gpu_s) < -0.001 * greatest(w.capacity, 1);
