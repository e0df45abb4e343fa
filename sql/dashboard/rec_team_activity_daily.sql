-- rec_team_activity_daily: evidence of an idle-allocation finding. Per UTC day in [$start, $end),
-- the team's GPU-hours allocated and observed by DCGM (5-minute GPU buckets × 300 s) and its active
-- GPU-hours (Σ bucket activity × 300 s), on $cluster.
SELECT date_trunc('day', bucket) AS day,
       count(*) * 300 / 3600.0 AS allocated_gpu_h,
       sum(activity) * 300 / 3600.0 AS active_gpu_h
FROM gpu_activity
WHERE cluster = $cluster AND team = $team AND bucket >= $start AND bucket < $end
GROUP BY 1
ORDER BY 1
