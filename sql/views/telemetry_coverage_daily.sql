-- telemetry_coverage_daily: observed allocated GPU-seconds / allocated GPU-seconds per cluster and UTC day.
CREATE OR REPLACE VIEW telemetry_coverage_daily AS
SELECT cluster, date_trunc('day', hour)::DATE AS day,
       sum(gpu_s) FILTER (WHERE bucket NOT IN ('down', 'planned_down', 'held', 'idle')) AS allocated_gpu_s,
       sum(observed_gpu_s) AS observed_gpu_s,
       sum(observed_gpu_s) / nullif(sum(gpu_s) FILTER (
           WHERE bucket NOT IN ('down', 'planned_down', 'held', 'idle')), 0) AS telemetry_coverage,
       sum(gpu_s) FILTER (WHERE bucket = 'allocated_idle') AS allocated_idle_gpu_s,
       max(as_of) AS as_of
FROM analytics.gpu_waterfall_hourly LEFT JOIN core.build_cutoffs USING (cluster)
GROUP BY ALL;
