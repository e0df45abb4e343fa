-- policy_changes: the policy-change ledger — one row per scheduler object and key changed, oldest first.
CREATE OR REPLACE VIEW policy_changes AS
SELECT change_id, cluster, scheduler, object, key, old, new, actor, changed_at, changed_after,
       source, scope
FROM analytics.policy_changes;
