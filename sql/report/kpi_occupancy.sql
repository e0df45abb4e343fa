-- Occupancy per cluster over the $hours complete UTC hours before its data cut-off (as_of).
WITH cut AS (
    SELECT cluster, date_trunc('hour', max(as_of)) AS cut_hour
    FROM occupancy_hourly
    GROUP BY cluster
)
SELECT
    o.cluster,
    sum(o.allocated_gpu_s)
        / nullif(sum(o.capacity_gpu_s - o.down_gpu_s - o.planned_down_gpu_s), 0) AS occupancy,
    count(*) AS hours
FROM occupancy_hourly AS o
JOIN cut USING (cluster)
WHERE o.hour >= cut.cut_hour - to_hours(CAST($hours AS BIGINT)) AND o.hour < cut.cut_hour
GROUP BY o.cluster
ORDER BY o.cluster;
