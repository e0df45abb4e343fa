-- Jain's index and unmet entitlement of one ISO week ($week = its Monday); cluster NULL = fleet.
SELECT cluster, teams, jain_index, unmet_entitlement
FROM fairness_summary_weekly
WHERE "window" = 'week' AND week = $week
ORDER BY cluster NULLS FIRST;
