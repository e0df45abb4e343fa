-- Slurm node events (down, drain) per host: start, end, state and reason.
SELECT DISTINCT cluster, node AS host, start_at, end_at, state, reason
FROM raw.slurm_events
WHERE event = 'node'
