-- The Slurm per-job GPU index map (raw.slurm_job_gres): which GPU indices each job held on a node,
-- in snapshot order (a snapshot without a time first), then load order, so that the last row of
-- a (job, start, node) is its latest snapshot, the later load where two are dated alike.
SELECT cluster, job_id, start_at, node, gpu_indices, gres, snapshot_at
FROM raw.slurm_job_gres
ORDER BY snapshot_at NULLS FIRST, ingest_id
