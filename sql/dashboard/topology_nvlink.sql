-- Per cluster and UTC week overlapping the filter window: multi-node gangs that fit one NVLink clique (Kubernetes nvidia.com/gpu.clique), how many ran inside one, and the share; multi-node gangs on clique nodes and how many had no topology constraint (nvlink_colocation_weekly).
SELECT cluster, week, gangs, colocated, colocation_share, multi_node_gangs, unconstrained,
       unconstrained_share
FROM nvlink_colocation_weekly
WHERE ($cluster IS NULL OR cluster = $cluster)
  AND week < $end AND week + INTERVAL 7 DAY > $start
ORDER BY cluster, week;
