-- k8s_pods: one row per pod uid, from the latest `kubectl get pods -o json` snapshot holding it.
CREATE OR REPLACE VIEW k8s_pods AS
SELECT cluster, uid, namespace, name, node_name, phase, created_at, scheduled_at, started_at,
       finished_at, deleted_at, gpus, queue_name, workload_name, owner_kind, owner_name,
       exit_code, termination_reason, restart_count
FROM core.k8s_pods;
