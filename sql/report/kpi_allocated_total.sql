-- Allocated GPU-hours per cluster over all loaded data.
SELECT cluster, sum(allocated_gpu_s) / 3600.0 AS allocated_gpu_h
FROM occupancy_hourly
GROUP BY cluster
ORDER BY cluster;
