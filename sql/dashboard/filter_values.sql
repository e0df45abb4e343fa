-- The clusters and teams the filters offer: every value in the hourly, attempt and fairness views.
SELECT DISTINCT 'cluster' AS kind, cluster AS value FROM occupancy_hourly WHERE cluster IS NOT NULL
UNION SELECT 'cluster', cluster FROM jobs WHERE cluster IS NOT NULL
UNION SELECT 'team', team FROM jobs WHERE team IS NOT NULL
UNION SELECT 'team', team FROM fairness_weekly WHERE team IS NOT NULL
ORDER BY kind, value;
