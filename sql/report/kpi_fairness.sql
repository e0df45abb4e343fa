-- Fleet Jain's index and unmet entitlement: every 'week' window (the caller keeps the latest
-- complete one, metrics.periods) and the latest 'rolling_28d' window.
SELECT "window", week, jain_index, unmet_entitlement
FROM fairness_summary_weekly
WHERE cluster IS NULL
QUALIFY "window" = 'week' OR row_number() OVER (PARTITION BY "window" ORDER BY week DESC) = 1
ORDER BY "window", week;
