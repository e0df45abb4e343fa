-- Per-team fairness rows of one ISO week ($week = its Monday 00:00 UTC); cluster NULL = the fleet.
SELECT cluster, team, share, demand_gpu_s, fair_gpu_s, used_gpu_s, entitlement_ratio,
       fair_share_debt_gpu_h
FROM fairness_weekly
WHERE "window" = 'week' AND week = $week
ORDER BY cluster NULLS FIRST, team;
