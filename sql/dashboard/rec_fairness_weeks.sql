-- rec_fairness_weeks: evidence of a fairness finding. Per ISO week (`week` window) and team on
-- $cluster: GPU-hours received (used) and the fair allocation, weeks starting in [$start, $end).
SELECT week, team, used_gpu_s / 3600 AS used_gpu_h, fair_gpu_s / 3600 AS fair_gpu_h,
       entitlement_ratio
FROM fairness_weekly
WHERE "window" = 'week' AND cluster = $cluster AND week >= date_trunc('week', $start) AND week < $end
ORDER BY week, team
