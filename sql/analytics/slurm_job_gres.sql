-- The Slurm per-job GPU index map (raw.slurm_job_gres): which GPU indices each job held on a node.
SELECT cluster, job_id, start_at, node, gpu_indices, gres, snapshot_at FROM raw.slurm_job_gres
