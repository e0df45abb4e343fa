-- Degraded domains at each cluster's gang level in the filter window: hours with a tray down or drained, the most trays out, first and last such hour, and healthy trays in the window's last hour.
WITH gang AS (SELECT cluster, hour, level FROM stranded_gpu_hourly WHERE level IS NOT NULL),
d AS (
    SELECT d.* FROM domain_capacity_hourly AS d JOIN gang USING (cluster, hour, level)
    WHERE ($cluster IS NULL OR d.cluster = $cluster) AND d.hour >= $start AND d.hour < $end
)
SELECT cluster, domain, any_value(nodes) AS trays,
       count(*) FILTER (WHERE degraded_nodes > 0) AS hours_degraded,
       max(degraded_nodes) AS max_trays_out,
       min(hour) FILTER (WHERE degraded_nodes > 0) AS first_degraded,
       max(hour) FILTER (WHERE degraded_nodes > 0) AS last_degraded,
       arg_max(healthy_nodes, hour) AS healthy_now
FROM d
GROUP BY cluster, domain
HAVING max(degraded_nodes) > 0
ORDER BY max_trays_out DESC, hours_degraded DESC, cluster, domain;
