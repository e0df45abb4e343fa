-- Daily occupancy per cluster (UTC days), from the hourly view.
SELECT cluster,
       date_trunc('day', hour) AS day,
       sum(allocated_gpu_s) / nullif(sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s), 0) AS occupancy,
       sum(allocated_gpu_s) / 3600.0 AS allocated_gpu_h
FROM occupancy_hourly
GROUP BY ALL
ORDER BY cluster, day;
