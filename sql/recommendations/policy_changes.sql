-- policy_changes: the policy-change ledger, to match applied recommendations (recommendation status).
SELECT change_id, cluster, object, key, old, new, changed_at
FROM policy_changes
ORDER BY changed_at, change_id
