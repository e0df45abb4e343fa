-- Fleet Jain's index and unmet entitlement of the latest window of each kind (week, rolling_28d).
SELECT "window", week, jain_index, unmet_entitlement
FROM fairness_summary_weekly
WHERE cluster IS NULL
QUALIFY row_number() OVER (PARTITION BY "window" ORDER BY week DESC) = 1
ORDER BY "window";
