-- The GPU-time waterfall per cluster and leaf over the filter window: GPU-hours and share of capacity.
SELECT cluster, bucket AS leaf, sum(gpu_s) / 3600.0 AS gpu_h,
       sum(gpu_s) / nullif(sum(sum(gpu_s)) OVER (PARTITION BY cluster), 0) AS share_of_capacity
FROM gpu_waterfall_hourly
WHERE ($cluster IS NULL OR cluster = $cluster) AND hour >= $start AND hour < $end
GROUP BY cluster, bucket
ORDER BY cluster, leaf;
