-- The policy-change ledger in the filters' window (by changed_at) and cluster, oldest first.
SELECT change_id, cluster, scheduler, scope, object, key, old, new, actor, changed_at,
       changed_after, source
FROM policy_changes
WHERE ($cluster IS NULL OR cluster = $cluster)
  AND changed_at >= $start AND changed_at < $end
ORDER BY changed_at, change_id;
