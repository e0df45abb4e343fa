-- Node-hours of a Slurm-on-Kubernetes cluster whose Slurm-side leaves (allocated + idle) do not sum to the GPU-seconds its slurmd pods held, or whose idle is negative: Slurm allocated more than the pod holds, a GRES mismatch (METRICS.md "Slurm on Kubernetes").
SELECT count(*) FROM analytics.slurm_on_k8s_hourly
WHERE abs(slurm_allocated_gpu_s + slurm_idle_gpu_s - lent_to_slurm_gpu_s) > 1e-6
   OR slurm_idle_gpu_s < -1e-6;
