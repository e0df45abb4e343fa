-- reservations_in_window: Slurm reservation rows (scontrol snapshots and slurmdbd history) that
-- overlap [$start, ∞); one row per loaded record, occurrences are merged by the rule.
SELECT cluster, name, start_at, end_at, nodes, node_count, flags, maint, gpus, snapshot_at
FROM raw.slurm_reservations
WHERE end_at >= $start
ORDER BY cluster, name, start_at
