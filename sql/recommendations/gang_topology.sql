-- gang_topology: the dated node → domain map of each cluster's gang level: each map's rows of the level stranded_gpu_hourly gives at the hours it was in force.
WITH gang AS (SELECT cluster, hour, level FROM stranded_gpu_hourly WHERE level IS NOT NULL)
SELECT t.cluster, t.domain, t.node, t.valid_from, t.valid_to
FROM topology_nodes AS t
WHERE EXISTS (
    SELECT 1 FROM gang AS g
    WHERE g.cluster = t.cluster AND g.level = t.level
      AND (t.valid_from IS NULL OR g.hour >= t.valid_from) AND (t.valid_to IS NULL OR g.hour < t.valid_to)
)
ORDER BY t.cluster, t.domain, t.node;
