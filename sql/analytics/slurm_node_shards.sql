-- Each Slurm node's latest `scontrol show node` state (raw.slurm_nodes: the latest snapshot,
-- snapshot_at, whatever order the files were loaded in; then the last load and its last record) where its Gres names GPU shards: cluster, host, gpus, gres
-- (pipelines.core.gpu_shards: a job's shards as a fraction of its nodes' GPUs). A node whose
-- latest state names no shard is left out, whatever an earlier load said.
SELECT cluster, host, gpus, gres
FROM (
    SELECT cluster, host, gpus, gres,
        row_number() OVER (
            PARTITION BY cluster, host
            ORDER BY snapshot_at DESC NULLS LAST, ingest_id DESC, line_no DESC
        ) AS latest
    FROM raw.slurm_nodes
)
WHERE latest = 1 AND gres LIKE '%shard%'
ORDER BY cluster, host
