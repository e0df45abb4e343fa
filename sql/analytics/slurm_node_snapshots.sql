-- Dated `scontrol show node` snapshots of the nodes that ever had a reason time (down, drained).
SELECT cluster, host, gpus, state, base_state, state_flags, reason, reason_at, snapshot_at,
    ingest_id, line_no
FROM raw.slurm_nodes
WHERE snapshot_at IS NOT NULL
    AND (cluster, host) IN (
        SELECT cluster, host FROM raw.slurm_nodes
        WHERE reason_at IS NOT NULL AND snapshot_at IS NOT NULL
    )
ORDER BY cluster, host, snapshot_at, ingest_id, line_no
