-- Per UTC day (clusters with a topology map), the idle leaf split into stranded and other and the held leaf into held for gangs and other, in GPU-hours, with the stranded share.
SELECT CAST(date_trunc('day', hour) AS DATE) AS day,
       sum(idle_gpu_s) / 3600 AS idle_gpu_h,
       sum(idle_stranded_gpu_s) / 3600 AS idle_stranded_gpu_h,
       sum(held_gpu_s) / 3600 AS held_gpu_h,
       sum(held_for_gangs_gpu_s) / 3600 AS held_for_gangs_gpu_h,
       sum(stranded_gpu_s) / 3600 AS stranded_gpu_h,
       sum(stranded_gpu_s) / nullif(sum(idle_gpu_s + held_gpu_s), 0) AS stranded_share
FROM stranded_gpu_hourly
WHERE level IS NOT NULL AND ($cluster IS NULL OR cluster = $cluster)
  AND hour >= $start AND hour < $end
GROUP BY ALL
ORDER BY day;
