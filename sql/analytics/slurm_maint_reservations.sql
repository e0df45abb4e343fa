-- The MAINT reservations: their nodes are planned down over their times (METRICS.md "Node states").
SELECT cluster, name, start_at, end_at, nodes, flags, maint, ingest_id, line_no
FROM raw.slurm_reservations
WHERE maint
ORDER BY cluster, name, start_at, ingest_id, line_no
