-- Per team, large jobs eligible in the filter window: their waits split into quota, priority, fragmentation and other (hours), idle GPU-hours while topology held them, and how many are exact.
SELECT team,
       count(*) AS jobs,
       sum(wait_s) / 3600 AS wait_h,
       sum(quota_s) / 3600 AS quota_h,
       sum(priority_s) / 3600 AS priority_h,
       sum(fragmentation_s) / 3600 AS fragmentation_h,
       sum(other_s) / 3600 AS other_h,
       sum(blocked_idle_gpu_s) / 3600 AS blocked_idle_gpu_h,
       count(*) FILTER (WHERE basis = 'exact') AS exact_jobs
FROM large_job_wait_causes
WHERE ($cluster IS NULL OR cluster = $cluster) AND ($team IS NULL OR team = $team)
  AND eligible_at >= $start AND eligible_at < $end
GROUP BY team
ORDER BY fragmentation_h DESC, team;
