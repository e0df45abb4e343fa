-- rec_large_waits_daily: evidence of a backfill finding. Per UTC day in [$start, $end) on $cluster:
-- large attempts (≥ $min_gpus GPUs, partition $partition) that started that day, their mean and
-- max wait (h), and the GPU-hours of the waterfall's `held` leaf (idle while a large job waited).
WITH waits AS (
    SELECT date_trunc('day', start_at) AS day, count(*) AS large_attempts,
           avg(wait_s) / 3600 AS mean_wait_h, max(wait_s) / 3600 AS max_wait_h
    FROM jobs
    WHERE cluster = $cluster AND partition = $partition AND gpus >= $min_gpus
      AND wait_s IS NOT NULL AND start_at >= $start AND start_at < $end
    GROUP BY 1
), held AS (
    SELECT date_trunc('day', hour) AS day, sum(gpu_s) / 3600 AS held_gpu_h
    FROM gpu_waterfall_hourly
    WHERE cluster = $cluster AND bucket = 'held' AND hour >= $start AND hour < $end
    GROUP BY 1
)
SELECT coalesce(w.day, h.day) AS day, coalesce(w.large_attempts, 0) AS large_attempts,
       w.mean_wait_h, w.max_wait_h, coalesce(h.held_gpu_h, 0) AS held_gpu_h
FROM waits w FULL JOIN held h ON w.day = h.day
ORDER BY 1
