-- Occupancy and GPU-hours over [$start, $end) per cluster; cluster NULL = the fleet.
SELECT
    cluster,
    sum(capacity_gpu_s) AS capacity_gpu_s,
    sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s) AS available_gpu_s,
    sum(allocated_gpu_s) AS allocated_gpu_s,
    sum(allocated_gpu_s) / nullif(sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s), 0)
        AS occupancy,
    count(DISTINCT hour) AS hours
FROM occupancy_hourly
WHERE hour >= $start AND hour < $end
GROUP BY GROUPING SETS ((cluster), ())
HAVING count(*) > 0
ORDER BY cluster NULLS FIRST;
