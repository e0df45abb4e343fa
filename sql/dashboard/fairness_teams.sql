-- Fairness per team and week (window 'week'; cluster NULL = fleet): entitlement, received and fair shares, debt.
WITH w AS (
    SELECT week, team, share, demand_gpu_s, fair_gpu_s, used_gpu_s, entitlement_ratio,
           fair_share_debt_gpu_h,
           used_gpu_s / nullif(sum(used_gpu_s) OVER (PARTITION BY week), 0) AS received_share,
           fair_gpu_s / nullif(sum(fair_gpu_s) OVER (PARTITION BY week), 0) AS fair_share
    FROM fairness_weekly
    WHERE "window" = 'week' AND cluster IS NOT DISTINCT FROM $cluster
      AND week < $end AND week + INTERVAL 7 DAY > $start
)
SELECT week, team, share AS entitlement_share, received_share, fair_share,
       demand_gpu_s / 3600.0 AS demand_gpu_h, fair_gpu_s / 3600.0 AS fair_gpu_h,
       used_gpu_s / 3600.0 AS used_gpu_h, entitlement_ratio, fair_share_debt_gpu_h
FROM w
WHERE ($team IS NULL OR team = $team)
ORDER BY week, team;
