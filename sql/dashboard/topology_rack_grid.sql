-- One row per domain of each cluster's gang level at $hour: trays, healthy, degraded, allocated and free, free GPUs, largest placeable segment.
WITH gang AS (SELECT cluster, hour, level FROM stranded_gpu_hourly WHERE level IS NOT NULL)
SELECT d.cluster, d.level, d.domain, d.nodes, d.healthy_nodes, d.degraded_nodes, d.allocated_nodes,
       d.free_nodes, d.free_gpus, d.largest_segment
FROM domain_capacity_hourly AS d JOIN gang USING (cluster, hour, level)
WHERE d.hour = $hour AND ($cluster IS NULL OR d.cluster = $cluster)
ORDER BY d.cluster, d.domain;
