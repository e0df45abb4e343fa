-- GPU-seconds per waterfall leaf over [$start, $end), per cluster (cluster NULL = the fleet).
SELECT cluster, bucket, sum(gpu_s) AS gpu_s
FROM gpu_waterfall_hourly
WHERE hour >= $start AND hour < $end
GROUP BY GROUPING SETS ((cluster, bucket), (bucket))
ORDER BY cluster NULLS FIRST, bucket;
