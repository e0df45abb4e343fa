-- The weekly fairness rows (window 'week'; the rolling 28-day rows are left out).
SELECT * FROM fairness_weekly WHERE "window" = 'week'
