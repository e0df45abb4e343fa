-- Node-hours of a Slurm-on-Kubernetes cluster whose Kubernetes-side leaves (lent to Slurm + native pods + idle) do not sum to the node's capacity, or whose idle is negative: pods hold more GPUs than the node has (METRICS.md "Slurm on Kubernetes").
SELECT count(*) FROM analytics.slurm_on_k8s_hourly
WHERE capacity_gpu_s IS NOT NULL
  AND (abs(lent_to_slurm_gpu_s + k8s_native_gpu_s + k8s_idle_gpu_s - capacity_gpu_s) > 1e-6
       OR k8s_idle_gpu_s < -1e-6);
