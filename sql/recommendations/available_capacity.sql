-- available_capacity: GPU-seconds available (capacity − down − planned_down) per cluster from $start on.
SELECT cluster,
       sum(capacity_gpu_s - coalesce(down_gpu_s, 0) - coalesce(planned_down_gpu_s, 0)) AS available_gpu_s
FROM occupancy_hourly
WHERE hour >= $start
GROUP BY cluster
