-- The jobs (cluster, scontrol's JobId = sacct's JobIDRaw) whose per-job GPU index map the loads
-- $ids (new since the last build) may change: a row of theirs with GPU indices whose key (job,
-- start, node) no other load holds with the same indices and GRES, or another load holds with
-- other indices or GRES. A daily snapshot that names a running job with the indices it had
-- names no change (pipelines.analytics.incremental._gres_days; metrics.attribution.gres_holdings
-- drops MIG rows, then keeps one row per key, the latest snapshot's, else the last loaded: the
-- GRES string is compared too, so a key that turns from MIG to whole GPUs counts).
WITH new_rows AS (
    SELECT DISTINCT cluster, job_id, start_at, node, gpu_indices, gres
    FROM raw.slurm_job_gres
    WHERE list_contains($ids, ingest_id) AND gpu_indices IS NOT NULL
),
other_rows AS (
    SELECT DISTINCT g.cluster, g.job_id, g.start_at, g.node, g.gpu_indices, g.gres
    FROM raw.slurm_job_gres AS g
    SEMI JOIN new_rows AS n ON g.cluster = n.cluster AND g.job_id = n.job_id
    WHERE NOT list_contains($ids, g.ingest_id) AND g.gpu_indices IS NOT NULL
)
SELECT DISTINCT n.cluster, n.job_id
FROM new_rows AS n
WHERE NOT EXISTS (
        SELECT 1 FROM other_rows AS o
        WHERE o.cluster = n.cluster AND o.job_id = n.job_id
            AND o.start_at IS NOT DISTINCT FROM n.start_at AND o.node IS NOT DISTINCT FROM n.node
            AND o.gpu_indices = n.gpu_indices AND o.gres IS NOT DISTINCT FROM n.gres
    )
    OR EXISTS (
        SELECT 1 FROM other_rows AS o
        WHERE o.cluster = n.cluster AND o.job_id = n.job_id
            AND o.start_at IS NOT DISTINCT FROM n.start_at AND o.node IS NOT DISTINCT FROM n.node
            AND (o.gpu_indices <> n.gpu_indices OR o.gres IS DISTINCT FROM n.gres)
    )
ORDER BY 1, 2
