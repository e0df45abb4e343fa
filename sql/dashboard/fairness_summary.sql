-- Jain's fairness index and unmet entitlement per week (window 'week'; cluster NULL = fleet).
SELECT week, teams, jain_index, unmet_entitlement
FROM fairness_summary_weekly
WHERE "window" = 'week' AND cluster IS NOT DISTINCT FROM $cluster
  AND week < $end AND week + INTERVAL 7 DAY > $start
ORDER BY week;
