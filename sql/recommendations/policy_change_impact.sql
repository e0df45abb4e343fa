-- policy_change_impact: the measured effect of each change per KPI and method (recommendation status).
SELECT change_id, kpi, method, verdict
FROM policy_change_impact
