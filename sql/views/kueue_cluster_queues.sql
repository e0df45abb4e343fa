-- kueue_cluster_queues: each ClusterQueue's GPU quota rows (one per flavor × GPU resource) from
-- its latest `kubectl get clusterqueues -o json` snapshot; as_of = the cluster's newest snapshot.
CREATE OR REPLACE VIEW kueue_cluster_queues AS
WITH latest AS (
    SELECT *
    FROM raw.kueue_cluster_queues
    QUALIFY dense_rank() OVER (
        PARTITION BY cluster, name ORDER BY snapshot_at DESC, ingest_id DESC
    ) = 1
)
SELECT cluster, name, uid, cohort, flavor, resource, nominal_quota, borrowing_limit,
       lending_limit, nominal_gpus, usage_gpus, borrowed_gpus, queueing_strategy,
       preemption_within_cq, reclaim_within_cohort, fair_sharing_weight, pending_workloads,
       admitted_workloads, created_at, snapshot_at,
       max(snapshot_at) OVER (PARTITION BY cluster) AS as_of
FROM latest;
