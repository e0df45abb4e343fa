-- Headline numbers in the filter window: occupancy, allocated GPU-hours, attempts started, window, as-of.
WITH occ AS (
    SELECT * FROM occupancy_hourly
    WHERE ($cluster IS NULL OR cluster = $cluster) AND hour >= $start AND hour < $end
)
SELECT
    sum(allocated_gpu_s) / nullif(sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s), 0) AS occupancy,
    sum(allocated_gpu_s) / 3600.0 AS allocated_gpu_h,
    sum(capacity_gpu_s) / 3600.0 AS capacity_gpu_h,
    (SELECT count(*) FROM jobs
     WHERE ($cluster IS NULL OR cluster = $cluster) AND ($team IS NULL OR team = $team)
       AND start_at >= $start AND start_at < $end) AS attempts,
    min(hour) AS first_hour,
    max(hour) + INTERVAL 1 HOUR AS last_hour,
    max(as_of) AS as_of
FROM occ;
