-- occupancy_hourly: allocated GPU-seconds against capacity per cluster and hour (METRICS.md).
CREATE OR REPLACE VIEW occupancy_hourly AS
SELECT cluster, hour, capacity_gpu_s, down_gpu_s, planned_down_gpu_s, allocated_gpu_s, occupancy,
       capacity_source, as_of
FROM analytics.occupancy_hourly LEFT JOIN core.build_cutoffs USING (cluster);
