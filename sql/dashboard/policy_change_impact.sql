-- The measured effects of policy changes (every change, every KPI and method) on the filters' cluster.
SELECT change_id, bundle_id, cluster, scope, kpi, method, window_start, window_end, n_pre, n_post,
       unit, before, after, estimate, ci_low, ci_high, p_value, placebo_p, mde, verdict
FROM policy_change_impact
WHERE ($cluster IS NULL OR cluster = $cluster)
ORDER BY cluster, change_id, kpi, method;
