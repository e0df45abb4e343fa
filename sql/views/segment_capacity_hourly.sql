-- segment_capacity_hourly: per cluster, hour, topology level and segment size, slots of s whole nodes in one domain and the segment-capacity efficiency (METRICS.md "Domain capacity, stranded GPUs and large-job waits").
CREATE OR REPLACE VIEW segment_capacity_hourly AS
SELECT cluster, hour, level, segment_size, nodes, healthy_nodes, configured_slots, healthy_slots,
       free_slots, usable_nodes, efficiency, as_of
FROM analytics.segment_capacity_hourly LEFT JOIN core.build_cutoffs USING (cluster);
