-- Fleet goodput ratio and telemetry coverage per cluster over the $hours complete hours before as_of.
WITH cut AS (
    SELECT cluster, date_trunc('hour', max(as_of)) AS cut_hour
    FROM gpu_waterfall_hourly
    GROUP BY cluster
),
w AS (
    SELECT g.*
    FROM gpu_waterfall_hourly AS g
    JOIN cut USING (cluster)
    WHERE g.hour >= cut.cut_hour - to_hours(CAST($hours AS BIGINT)) AND g.hour < cut.cut_hour
)
SELECT
    cluster,
    sum(gpu_s) FILTER (WHERE bucket = 'goodput')
        / nullif(sum(capacity_gpu_s) FILTER (WHERE bucket = 'down'), 0) AS goodput_ratio,
    sum(observed_gpu_s) FILTER (WHERE bucket IN ('failed_work_infra', 'failed_work_user',
        'preempted_work', 'timeout_work', 'cancelled_work', 'allocated_idle', 'goodput'))
        / nullif(sum(gpu_s) FILTER (WHERE bucket IN ('failed_work_infra', 'failed_work_user',
        'preempted_work', 'timeout_work', 'cancelled_work', 'allocated_idle', 'goodput')), 0)
        AS telemetry_coverage
FROM w
GROUP BY cluster
ORDER BY cluster;
