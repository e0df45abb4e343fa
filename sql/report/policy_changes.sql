-- policy_changes: the whole policy-change ledger, oldest first (the report keeps the week's and the measured ones).
SELECT change_id, cluster, scheduler, scope, object, key, old, new, actor, changed_at,
       changed_after, source
FROM policy_changes
ORDER BY changed_at, change_id
