-- Every team of the serving copy (attempts and fairness rows, all weeks): the set team colours are resolved over, as the dashboard's filters offer them.
SELECT DISTINCT team FROM jobs WHERE team IS NOT NULL
UNION SELECT team FROM fairness_weekly WHERE team IS NOT NULL
ORDER BY team;
