-- policy_change_impact: every measured effect of a policy change (per change, KPI and method).
SELECT change_id, bundle_id, cluster, scope, kpi, method, window_start, window_end, n_pre, n_post,
       unit, before, after, estimate, ci_low, ci_high, p_value, placebo_p, mde, verdict
FROM policy_change_impact
ORDER BY cluster, change_id, kpi, method
