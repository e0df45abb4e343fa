-- k8s_events: one row per Kubernetes event uid, with its latest count.
CREATE OR REPLACE VIEW k8s_events AS
SELECT cluster, uid, namespace, involved_kind, involved_name, reason, type, message, count,
       first_seen, last_seen
FROM core.k8s_events;
