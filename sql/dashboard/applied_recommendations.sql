-- Recommendations a policy change applied (status past proposed), by the change that applied them.
SELECT change_id, id, rule, status
FROM recommendations
WHERE change_id IS NOT NULL
ORDER BY change_id, id;
