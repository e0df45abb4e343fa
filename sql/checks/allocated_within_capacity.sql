-- Cluster-hours whose allocated GPU-seconds exceed capacity by more than 0.1 %.
SELECT count(*) FROM analytics.occupancy_hourly
WHERE capacity_gpu_s > 0 AND allocated_gpu_s > capacity_gpu_s * 1.001;
