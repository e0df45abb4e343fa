-- occupancy_daily: the hourly occupancy summed per cluster and UTC day.
CREATE OR REPLACE VIEW occupancy_daily AS
SELECT cluster, date_trunc('day', hour)::DATE AS day,
       sum(capacity_gpu_s) AS capacity_gpu_s, sum(down_gpu_s) AS down_gpu_s,
       sum(planned_down_gpu_s) AS planned_down_gpu_s, sum(allocated_gpu_s) AS allocated_gpu_s,
       sum(allocated_gpu_s) / nullif(sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s), 0)
           AS occupancy,
       max(as_of) AS as_of
FROM analytics.occupancy_hourly LEFT JOIN core.build_cutoffs USING (cluster)
GROUP BY ALL;
