-- The `scontrol show node` states (raw.slurm_nodes) of each Slurm node whose Gres ever named
-- GPU shards, as they changed over time: cluster, host, gpus, gres, snapshot_at
-- (pipelines.core.gpu_shards: a job's shards as a fraction of its nodes' GPUs, by the state in
-- effect at the job's start; a never-started job's by each node's latest state). One row per
-- snapshot time (the last load, then its last record, of the snapshots taken at one time; the
-- undated snapshots of old loads, snapshot_at NULL, count as one, older than every dated one),
-- then only the rows whose gpus or gres differ from the node's state before (the same state
-- snapshotted again changes nothing). A state naming no shard is kept: it is the node's latest
-- where it was unsharded since. Ordered by cluster, host, snapshot_at (NULL first).
WITH sharded AS (
    SELECT DISTINCT cluster, host FROM raw.slurm_nodes WHERE gres LIKE '%shard%'
),
per_time AS (
    SELECT n.cluster, n.host, n.gpus, n.gres, n.snapshot_at,
        row_number() OVER (
            PARTITION BY n.cluster, n.host, n.snapshot_at
            ORDER BY n.ingest_id DESC, n.line_no DESC
        ) AS last_at
    FROM raw.slurm_nodes AS n
    SEMI JOIN sharded AS s ON n.cluster = s.cluster AND n.host = s.host
),
changes AS (
    SELECT cluster, host, gpus, gres, snapshot_at,
        gpus IS DISTINCT FROM lag(gpus) OVER w OR gres IS DISTINCT FROM lag(gres) OVER w
            OR lag(host) OVER w IS NULL AS changed
    FROM per_time
    WHERE last_at = 1
    WINDOW w AS (PARTITION BY cluster, host ORDER BY snapshot_at NULLS FIRST)
)
SELECT cluster, host, gpus, gres, snapshot_at
FROM changes
WHERE changed
ORDER BY cluster, host, snapshot_at NULLS FIRST
