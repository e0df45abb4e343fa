-- kueue_local_queues: each LocalQueue from its latest `kubectl get localqueues -A -o json`
-- snapshot; as_of = the cluster's newest snapshot.
CREATE OR REPLACE VIEW kueue_local_queues AS
WITH latest AS (
    SELECT *
    FROM raw.kueue_local_queues
    QUALIFY row_number() OVER (
        PARTITION BY cluster, namespace, name ORDER BY snapshot_at DESC, ingest_id DESC
    ) = 1
)
SELECT cluster, namespace, name, uid, cluster_queue, stop_policy, pending_workloads,
       reserving_workloads, admitted_workloads, created_at, snapshot_at,
       max(snapshot_at) OVER (PARTITION BY cluster) AS as_of
FROM latest;
