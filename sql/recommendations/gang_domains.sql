-- gang_domains: each cluster's gang-level domains (stranded_gpu_hourly's level there) at its last hour, of the map in force then: healthy trays and GPUs and the domain's nodes, comma-separated.
WITH last AS (SELECT cluster, max(hour) AS hour FROM domain_capacity_hourly GROUP BY cluster),
gang AS (
    SELECT s.cluster, s.hour, s.level FROM stranded_gpu_hourly AS s JOIN last USING (cluster, hour)
    WHERE s.level IS NOT NULL
),
nodes AS (
    SELECT t.cluster, t.domain, string_agg(t.node, ',' ORDER BY t.node) AS nodes_list
    FROM topology_nodes AS t JOIN gang AS g USING (cluster, level)
    WHERE (t.valid_from IS NULL OR t.valid_from <= g.hour) AND (t.valid_to IS NULL OR g.hour < t.valid_to)
    GROUP BY t.cluster, t.domain
)
SELECT d.cluster, d.domain, d.healthy_nodes, d.healthy_gpus, n.nodes_list
FROM domain_capacity_hourly AS d
JOIN gang USING (cluster, hour, level)
JOIN nodes AS n ON n.cluster = d.cluster AND n.domain = d.domain
ORDER BY d.cluster, d.domain;
