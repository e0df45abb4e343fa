-- policy_change_impact: the measured effect of each policy change (or bundle) on each KPI, per method.
CREATE OR REPLACE VIEW policy_change_impact AS
SELECT change_id, bundle_id, cluster, scope, kpi, method, window_start, window_end, n_pre, n_post,
       unit, before, after, estimate, ci_low, ci_high, p_value, placebo_p, mde, verdict
FROM analytics.policy_change_impact;
