-- waterfall_in_window: the GPU-time waterfall from $start on (cluster, hour, bucket, gpu_s).
SELECT cluster, hour, bucket, gpu_s
FROM gpu_waterfall_hourly
WHERE hour >= $start
