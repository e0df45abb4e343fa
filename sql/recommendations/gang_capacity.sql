-- gang_capacity: per cluster, hour since $start and domain of the gang level (stranded_gpu_hourly's level at each hour: the map in force's): healthy and whole free nodes and free GPUs (the defrag_candidates rule's state).
WITH gang AS (SELECT cluster, hour, level FROM stranded_gpu_hourly WHERE level IS NOT NULL)
SELECT d.cluster, d.hour, d.domain, d.healthy_nodes, d.free_nodes, d.free_gpus
FROM domain_capacity_hourly AS d JOIN gang USING (cluster, hour, level)
WHERE d.hour >= $start
ORDER BY d.cluster, d.hour, d.domain;
