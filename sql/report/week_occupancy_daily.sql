-- Occupancy and allocated GPU-hours per cluster and UTC day over [$start, $end).
SELECT
    cluster,
    date_trunc('day', hour) AS day,
    sum(allocated_gpu_s) / nullif(sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s), 0)
        AS occupancy,
    sum(allocated_gpu_s) / 3600.0 AS allocated_gpu_h
FROM occupancy_hourly
WHERE hour >= $start AND hour < $end
GROUP BY ALL
ORDER BY cluster, day;
