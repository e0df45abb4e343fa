-- Headline numbers over the whole window: occupancy, allocated GPU-hours, attempts.
SELECT
    sum(allocated_gpu_s) / nullif(sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s), 0) AS occupancy,
    sum(allocated_gpu_s) / 3600.0 AS allocated_gpu_h,
    sum(capacity_gpu_s) / 3600.0 AS capacity_gpu_h,
    (SELECT count(*) FROM jobs) AS attempts,
    (SELECT count(*) FROM jobs WHERE gpus > 0) AS gpu_attempts,
    min(hour) AS first_hour,
    max(hour) + INTERVAL 1 HOUR AS last_hour,
    max(as_of) AS as_of
FROM occupancy_hourly;
