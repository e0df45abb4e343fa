-- Cluster-hours whose waterfall leaves do not sum to capacity within 0.1 % (METRICS.md).
SELECT count(*) FROM (
    SELECT cluster, hour, sum(gpu_s) AS leaves, any_value(capacity_gpu_s) AS capacity
    FROM analytics.gpu_waterfall_hourly
    GROUP BY ALL
    HAVING abs(sum(gpu_s) - any_value(capacity_gpu_s)) > 0.001 * greatest(any_value(capacity_gpu_s), 1)
);
