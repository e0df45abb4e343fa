-- Slurm node events (down, drain), every export's copy: key, start, end, state, reason, load.
SELECT cluster, event, node, start_at, end_at, state, reason, ingest_id, line_no
FROM raw.slurm_events
WHERE event = 'node'
