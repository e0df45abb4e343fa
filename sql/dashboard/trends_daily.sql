-- Daily occupancy and fleet goodput ratio per cluster, with the goodput's telemetry coverage.
WITH occ AS (
    SELECT cluster, hour, allocated_gpu_s,
           capacity_gpu_s - down_gpu_s - planned_down_gpu_s AS available_gpu_s
    FROM occupancy_hourly
    WHERE ($cluster IS NULL OR cluster = $cluster) AND hour >= $start AND hour < $end
), wf AS (
    SELECT cluster, hour, any_value(capacity_gpu_s) AS capacity_gpu_s,
           sum(gpu_s) FILTER (WHERE bucket = 'goodput') AS goodput_gpu_s,
           sum(observed_gpu_s) FILTER (WHERE bucket = 'goodput') AS goodput_observed_gpu_s
    FROM gpu_waterfall_hourly
    WHERE ($cluster IS NULL OR cluster = $cluster) AND hour >= $start AND hour < $end
    GROUP BY ALL
)
SELECT cluster, date_trunc('day', hour)::DATE AS day,
       sum(allocated_gpu_s) / nullif(sum(available_gpu_s), 0) AS occupancy,
       sum(goodput_gpu_s) / nullif(sum(capacity_gpu_s), 0) AS goodput_ratio,
       sum(goodput_observed_gpu_s) / nullif(sum(goodput_gpu_s), 0) AS goodput_telemetry_coverage
FROM occ FULL JOIN wf USING (cluster, hour)
GROUP BY ALL
ORDER BY cluster, day;
