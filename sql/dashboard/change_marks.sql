-- Every policy change, for the annotations on the time charts (each chart keeps those in its window).
SELECT change_id, cluster, scheduler, scope, object, key, old, new, actor, changed_at, changed_after
FROM policy_changes
WHERE changed_at IS NOT NULL
ORDER BY changed_at, change_id;
