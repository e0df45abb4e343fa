-- gpu_waterfall_hourly: one row per cluster, hour and leaf bucket; a cluster-hour's rows sum to capacity.
CREATE OR REPLACE VIEW gpu_waterfall_hourly AS
SELECT cluster, hour, bucket, gpu_s, capacity_gpu_s, observed_gpu_s, active_gpu_s, as_of
FROM analytics.gpu_waterfall_hourly LEFT JOIN core.build_cutoffs USING (cluster);
