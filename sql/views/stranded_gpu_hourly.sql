-- stranded_gpu_hourly: per cluster-hour of the waterfall, its idle leaf split into stranded and other and its held leaf into held for gangs (the waterfall's time-axis gang_gpu_s, clusters with a gang level) and other (each pair sums to its leaf; METRICS.md "Domain capacity, stranded GPUs and large-job waits").
CREATE OR REPLACE VIEW stranded_gpu_hourly AS
WITH leaves AS (
    SELECT cluster, hour,
           coalesce(sum(gpu_s) FILTER (WHERE bucket = 'idle'), 0) AS idle_gpu_s,
           coalesce(sum(gpu_s) FILTER (WHERE bucket = 'held'), 0) AS held_gpu_s,
           coalesce(sum(gang_gpu_s) FILTER (WHERE bucket = 'held'), 0) AS gang_held_gpu_s,
           any_value(as_of) AS as_of
    FROM analytics.gpu_waterfall_hourly LEFT JOIN core.build_cutoffs USING (cluster)
    GROUP BY cluster, hour
), parts AS (
    SELECT l.cluster, l.hour, s.level, coalesce(s.free_gpus, 0) AS free_gpus,
           coalesce(s.pending_jobs, 0) AS pending_jobs, s.min_pending_gpus,
           coalesce(s.stranded_gpus, 0) AS stranded_gpus,
           coalesce(s.expected_stranded_gpus, 0) AS expected_stranded_gpus,
           l.idle_gpu_s, l.held_gpu_s,
           least(l.idle_gpu_s + l.held_gpu_s, coalesce(s.stranded_gpus, 0) * 3600) AS stranded_gpu_s,
           least(l.idle_gpu_s + l.held_gpu_s, coalesce(s.expected_stranded_gpus, 0) * 3600)
               AS expected_stranded_gpu_s,
           CASE WHEN s.cluster IS NULL THEN 0 ELSE least(l.held_gpu_s, l.gang_held_gpu_s) END
               AS held_for_gangs_gpu_s,
           l.as_of
    FROM leaves AS l
    LEFT JOIN analytics.topology_stranded_hourly AS s USING (cluster, hour)
)
SELECT cluster, hour, level, free_gpus, pending_jobs, min_pending_gpus, stranded_gpus,
       expected_stranded_gpus, idle_gpu_s, held_gpu_s, stranded_gpu_s, expected_stranded_gpu_s,
       least(idle_gpu_s, stranded_gpu_s) AS idle_stranded_gpu_s,
       idle_gpu_s - least(idle_gpu_s, stranded_gpu_s) AS idle_other_gpu_s,
       held_for_gangs_gpu_s,
       held_gpu_s - held_for_gangs_gpu_s AS held_other_gpu_s,
       stranded_gpu_s / nullif(idle_gpu_s + held_gpu_s, 0) AS stranded_share,
       as_of
FROM parts;
