-- The last rebuild's mode (full | incremental) and the plan's reason for it.
SELECT mode, reason FROM analytics.build_state ORDER BY build_id DESC LIMIT 1
