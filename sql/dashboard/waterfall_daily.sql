-- The GPU-time waterfall per cluster, UTC day and leaf (GPU-hours) in the filter window.
SELECT cluster, date_trunc('day', hour)::DATE AS day, bucket AS leaf,
       sum(gpu_s) / 3600.0 AS gpu_h, sum(observed_gpu_s) / 3600.0 AS observed_gpu_h
FROM gpu_waterfall_hourly
WHERE ($cluster IS NULL OR cluster = $cluster) AND hour >= $start AND hour < $end
GROUP BY ALL
ORDER BY cluster, day, leaf;
