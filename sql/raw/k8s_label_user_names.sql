-- The user names that Kubernetes pods' labels give (table {table}: raw.k8s_pods or
-- core.k8s_pods, labels as a JSON object): the value of each label whose key names a user,
-- its last segment (after the last '/': user, run.ai/user, example.org/owner) one of $keys,
-- case-insensitive. Kubernetes' recommended app.kubernetes.io/ labels name a tool, not a person
-- (app.kubernetes.io/created-by is the controller that made the object), and are left out. A
-- user seen only in Kubernetes has no user-name column, yet the labels, pod names, event
-- messages and node comments may name them.
SELECT DISTINCT trim(j.value ->> '$') AS user_name
FROM {table} AS p, json_each(p.labels) AS j
WHERE p.labels IS NOT NULL
  AND list_contains($keys, lower(regexp_extract(j.key, '([^/]*)$', 1)))
  AND NOT starts_with(lower(j.key), 'app.kubernetes.io/')
  AND json_type(j.value) = 'VARCHAR'
