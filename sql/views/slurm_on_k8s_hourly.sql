-- slurm_on_k8s_hourly: per Slurm-on-Kubernetes cluster, Kubernetes node and hour, who owns each GPU-second: capacity lent to Slurm, naive and reconciled allocated GPU-seconds, slurmd-held idle and the double-count rate (METRICS.md "Slurm on Kubernetes").
CREATE OR REPLACE VIEW slurm_on_k8s_hourly AS
SELECT cluster, k8s_cluster, pattern, k8s_node, hour, capacity_gpu_s, lent_to_slurm_gpu_s,
       k8s_native_gpu_s, k8s_idle_gpu_s, slurm_allocated_gpu_s, mirror_gpu_s, slurm_idle_gpu_s,
       slurmd_held_idle_gpu_s, naive_slurm_gpu_s, naive_k8s_gpu_s, naive_gpu_s,
       reconciled_gpu_s, double_count_rate, as_of
FROM analytics.slurm_on_k8s_hourly LEFT JOIN core.build_cutoffs USING (cluster);
