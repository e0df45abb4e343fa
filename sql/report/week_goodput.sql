-- Waterfall headline over [$start, $end) per cluster (NULL = fleet): goodput ratio and coverage.
-- Capacity is read from one leaf per cluster-hour (every leaf row repeats it), as headline_ratios.
SELECT
    cluster,
    sum(capacity_gpu_s) FILTER (WHERE bucket = 'down') AS capacity_gpu_s,
    sum(gpu_s) FILTER (WHERE bucket = 'goodput') AS goodput_gpu_s,
    sum(gpu_s) FILTER (WHERE bucket IN ('failed_work_infra', 'failed_work_user', 'preempted_work',
        'timeout_work', 'cancelled_work', 'allocated_idle', 'goodput')) AS allocated_gpu_s,
    sum(observed_gpu_s) FILTER (WHERE bucket IN ('failed_work_infra', 'failed_work_user',
        'preempted_work', 'timeout_work', 'cancelled_work', 'allocated_idle', 'goodput'))
        AS observed_allocated_gpu_s,
    sum(observed_gpu_s) FILTER (WHERE bucket = 'goodput') AS observed_goodput_gpu_s,
    sum(gpu_s) FILTER (WHERE bucket = 'goodput')
        / nullif(sum(capacity_gpu_s) FILTER (WHERE bucket = 'down'), 0) AS goodput_ratio,
    sum(observed_gpu_s) FILTER (WHERE bucket IN ('failed_work_infra', 'failed_work_user',
        'preempted_work', 'timeout_work', 'cancelled_work', 'allocated_idle', 'goodput'))
        / nullif(sum(gpu_s) FILTER (WHERE bucket IN ('failed_work_infra', 'failed_work_user',
        'preempted_work', 'timeout_work', 'cancelled_work', 'allocated_idle', 'goodput')), 0)
        AS telemetry_coverage
FROM gpu_waterfall_hourly
WHERE hour >= $start AND hour < $end
GROUP BY GROUPING SETS ((cluster), ())
HAVING count(*) > 0
ORDER BY cluster NULLS FIRST;
