-- Kubernetes workload attempts eligible in the filter window, with each stage's duration (s), ClusterQueue and week of eligible time.
SELECT cluster, coalesce(cluster_queue, '(no ClusterQueue)') AS cluster_queue, team, job_id,
       attempt, gpus, state, date_trunc('week', eligible_at) AS week, eligible_at,
       quota_wait_s, admission_check_s, scheduling_s, pod_startup_s, time_to_running_s,
       gang_start_spread_s, image_pull_s
FROM k8s_workloads
WHERE eligible_at IS NOT NULL AND eligible_at >= $start AND eligible_at < $end
  AND ($cluster IS NULL OR cluster = $cluster) AND ($team IS NULL OR team = $team);
