-- gang_topology: the dated node → domain map of each cluster's gang level (stranded_gpu_hourly's level).
WITH gang AS (SELECT DISTINCT cluster, level FROM stranded_gpu_hourly WHERE level IS NOT NULL)
SELECT t.cluster, t.domain, t.node, t.valid_from, t.valid_to
FROM topology_nodes AS t JOIN gang USING (cluster, level)
ORDER BY t.cluster, t.domain, t.node;
