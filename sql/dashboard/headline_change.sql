-- Headline numbers for the 7 days up to the window's end (or the data cut-off) and the 7 days before.
WITH cut AS (
    SELECT least($end, max(as_of)) AS t FROM occupancy_hourly
    WHERE ($cluster IS NULL OR cluster = $cluster)
), periods AS (
    SELECT 'last 7 days' AS period, t - INTERVAL 7 DAY AS period_start, t AS period_end FROM cut
    UNION ALL
    SELECT 'previous 7 days', t - INTERVAL 14 DAY, t - INTERVAL 7 DAY FROM cut
), occ AS (
    SELECT p.period,
           sum(o.allocated_gpu_s)
               / nullif(sum(o.capacity_gpu_s - o.down_gpu_s - o.planned_down_gpu_s), 0) AS occupancy,
           sum(o.allocated_gpu_s) / 3600.0 AS allocated_gpu_h,
           count(DISTINCT o.hour) AS hours
    FROM periods p
    LEFT JOIN occupancy_hourly o
      ON o.hour >= p.period_start AND o.hour < p.period_end AND o.hour >= $start
     AND ($cluster IS NULL OR o.cluster = $cluster)
    GROUP BY p.period
), att AS (
    SELECT p.period, count(j.start_at) AS attempts
    FROM periods p
    LEFT JOIN jobs j
      ON j.start_at >= p.period_start AND j.start_at < p.period_end AND j.start_at >= $start
     AND ($cluster IS NULL OR j.cluster = $cluster) AND ($team IS NULL OR j.team = $team)
    GROUP BY p.period
)
SELECT p.period, p.period_start, p.period_end, occ.occupancy, occ.allocated_gpu_h, occ.hours,
       att.attempts
FROM periods p JOIN occ USING (period) JOIN att USING (period)
ORDER BY p.period_start;
