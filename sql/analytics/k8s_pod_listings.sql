-- Every raw.k8s_pods row of the Kubernetes cluster $cluster, one load per listing: what
-- pipelines.core.slurm_on_k8s.slurmd_listing_ends reads to end a slurmd pod gone from the
-- listings (pipelines.analytics.slurm_on_k8s).
SELECT ingest_id, namespace, uid, labels,
       created_at, scheduled_at, started_at, finished_at, deleted_at
FROM raw.k8s_pods
WHERE cluster = $cluster
ORDER BY ingest_id, namespace, uid
