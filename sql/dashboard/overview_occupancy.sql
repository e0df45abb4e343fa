-- Per cluster in the filter window: allocated, available (capacity − down − planned_down) and capacity GPU-hours, hours with data.
SELECT cluster,
       sum(allocated_gpu_s) / 3600.0 AS allocated_gpu_h,
       sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s) / 3600.0 AS available_gpu_h,
       sum(capacity_gpu_s) / 3600.0 AS capacity_gpu_h,
       count(DISTINCT hour) AS hours
FROM occupancy_hourly
WHERE ($cluster IS NULL OR cluster = $cluster) AND hour >= $start AND hour < $end
GROUP BY cluster
ORDER BY cluster;
