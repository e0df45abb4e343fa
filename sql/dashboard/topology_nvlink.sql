-- Per cluster and UTC week overlapping the filter window: multi-node gangs that fit one NVLink clique (Kubernetes nvidia.com/gpu.clique), how many ran inside one, and the share (nvlink_colocation_weekly).
SELECT cluster, week, gangs, colocated, colocation_share
FROM nvlink_colocation_weekly
WHERE ($cluster IS NULL OR cluster = $cluster)
  AND week < $end AND week + INTERVAL 7 DAY > $start
ORDER BY cluster, week;
