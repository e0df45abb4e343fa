-- domain_capacity_hourly: per cluster, hour, topology level and domain, healthy, allocated and free nodes (trays) and GPUs at the hour start, and the largest gang and segment that still fit (METRICS.md "Domain capacity, stranded GPUs and large-job waits").
CREATE OR REPLACE VIEW domain_capacity_hourly AS
SELECT cluster, hour, level, domain, nodes, healthy_nodes, degraded_nodes, allocated_nodes,
       free_nodes, healthy_gpus, allocated_gpus, free_gpus, largest_gang_nodes, largest_segment,
       as_of
FROM analytics.domain_capacity_hourly LEFT JOIN core.build_cutoffs USING (cluster);
