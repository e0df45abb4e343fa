-- k8s_workloads: one row per Kueue workload attempt with each stage's timestamp (METRICS.md).
CREATE OR REPLACE VIEW k8s_workloads AS
SELECT cluster, namespace, job_id, workload_uid, attempt, attempts, kueue, team, queue_name,
       cluster_queue, priority, pods_expected, pods, pods_bound, gpus, req_gpus, state, end_reason,
       end_message, created_at, eligible_at, eligible_source, quota_reserved_at, admitted_at,
       first_pod_scheduled_at, all_pods_scheduled_at, first_pod_running_at, all_pods_running_at,
       end_at, quota_wait_s, admission_check_s, scheduling_s, pod_startup_s, time_to_running_s,
       gang_start_spread_s, image_pull_s, image_pulls, reported_wait_s, requeue_count,
       evictions_inferred, scheduler_pending_events, kueue_pending_events, top_pending_reason,
       as_of
FROM core.k8s_workloads LEFT JOIN core.build_cutoffs USING (cluster);
