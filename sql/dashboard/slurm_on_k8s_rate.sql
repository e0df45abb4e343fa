-- Slurm on Kubernetes per cluster over the window: naive and reconciled GPU-hours, their double-count rate (ratio of the sums), lent capacity and slurmd-held idle (METRICS.md "Slurm on Kubernetes").
SELECT cluster, any_value(k8s_cluster) AS k8s_cluster, any_value(pattern) AS pattern,
       sum(naive_gpu_s) / 3600 AS naive_gpu_h,
       sum(reconciled_gpu_s) / 3600 AS reconciled_gpu_h,
       CASE WHEN sum(reconciled_gpu_s) <> 0
            THEN (sum(naive_gpu_s) - sum(reconciled_gpu_s)) / sum(reconciled_gpu_s) END
           AS double_count_rate,
       sum(lent_to_slurm_gpu_s) / 3600 AS lent_gpu_h,
       sum(slurmd_held_idle_gpu_s) / 3600 AS slurmd_held_idle_gpu_h
FROM slurm_on_k8s_hourly
WHERE hour >= $start AND hour < $end
  AND ($cluster IS NULL OR cluster = $cluster OR k8s_cluster = $cluster)
GROUP BY cluster
ORDER BY cluster;
