-- Every loaded reservation row: the latest load's row per reservation decides its times and MAINT flag (METRICS.md "Node states").
SELECT cluster, name, reservation_id, start_at, end_at, nodes, flags, maint, state, snapshot_at,
    ingest_id, line_no
FROM raw.slurm_reservations
ORDER BY cluster, name, start_at, ingest_id, line_no
