-- State changes of dated `scontrol show node` snapshots, nodes ever down with a reason time, clusters without sacctmgr node events.
WITH dated AS (
    SELECT rowid AS rid, cluster, host, snapshot_at, ingest_id, line_no, reason_at, reason,
        coalesce(list_contains($down_states, base_state)
            OR list_has_any(state_flags, $down_states), false) AS is_down
    FROM raw.slurm_nodes AS n
    WHERE snapshot_at IS NOT NULL
        AND NOT EXISTS (
            SELECT 1 FROM raw.slurm_events AS e
            WHERE e.event = 'node' AND e.cluster = n.cluster
                AND e.node IS NOT NULL AND e.start_at IS NOT NULL
        )
),
marked AS (
    SELECT rid, cluster, host, snapshot_at, ingest_id, line_no, is_down,
        CASE WHEN is_down THEN reason_at END AS run_at,
        CASE WHEN is_down THEN reason END AS run_reason
    FROM dated
    WHERE NOT (is_down AND reason_at IS NULL)
),
edges AS (
    SELECT rid,
        lag(is_down) OVER w IS NULL
            OR run_at IS DISTINCT FROM lag(run_at) OVER w
            OR run_reason IS DISTINCT FROM lag(run_reason) OVER w
            OR lead(is_down) OVER w IS NULL
            OR run_at IS DISTINCT FROM lead(run_at) OVER w
            OR run_reason IS DISTINCT FROM lead(run_reason) OVER w AS edge,
        bool_or(is_down) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
            AS ever_down
    FROM marked
    WINDOW w AS (PARTITION BY cluster, host ORDER BY snapshot_at, ingest_id, line_no)
)
SELECT n.cluster, n.host, n.gpus, n.state, n.base_state, n.state_flags, n.reason, n.reason_at,
    n.snapshot_at, n.ingest_id, n.line_no
FROM raw.slurm_nodes AS n
SEMI JOIN (SELECT rid FROM edges WHERE ever_down AND edge) AS k ON n.rowid = k.rid
ORDER BY n.cluster, n.host, n.snapshot_at, n.ingest_id, n.line_no
