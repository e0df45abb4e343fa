-- gang_domains: each cluster's gang-level domains (stranded_gpu_hourly's level) at its last hour: healthy trays and GPUs and the domain's nodes, comma-separated.
WITH gang AS (SELECT DISTINCT cluster, level FROM stranded_gpu_hourly WHERE level IS NOT NULL),
last AS (SELECT cluster, max(hour) AS hour FROM domain_capacity_hourly GROUP BY cluster),
nodes AS (
    SELECT t.cluster, t.domain, string_agg(t.node, ',' ORDER BY t.node) AS nodes_list
    FROM topology_nodes AS t JOIN gang USING (cluster, level)
    WHERE t.valid_to IS NULL
    GROUP BY t.cluster, t.domain
)
SELECT d.cluster, d.domain, d.healthy_nodes, d.healthy_gpus, n.nodes_list
FROM domain_capacity_hourly AS d
JOIN gang USING (cluster, level)
JOIN last USING (cluster, hour)
JOIN nodes AS n ON n.cluster = d.cluster AND n.domain = d.domain
ORDER BY d.cluster, d.domain;
