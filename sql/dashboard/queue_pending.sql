-- Pending Slurm jobs and Kueue workloads at each cluster's data cut-off: size, team, wait so far (cut-off − eligible) and reason.
-- Slurm: never-started allocation rows in state PENDING (reason = sacct Reason as exported);
-- Kubernetes: Workload attempts in state PENDING (reason = the most frequent pending reason, with
-- the latest event message).
WITH cut AS (
    SELECT cluster, max(as_of) AS as_of FROM jobs GROUP BY cluster
),
slurm AS (
    SELECT 'slurm' AS source, s.cluster, s.job_id, NULL::BIGINT AS attempt, s.user_name, s.team,
           s.account, s.partition, s.qos AS queue, s.req_gpus AS gpus, s.submit_at,
           s.eligible_at, s.timelimit_s, nullif(s.reason, '') AS reason, NULL::VARCHAR AS reason_detail,
           c.as_of
    FROM slurm_jobs AS s
    LEFT JOIN cut AS c USING (cluster)
    WHERE s.step IS NULL AND s.start_at IS NULL AND s.state = 'PENDING'
),
latest AS (
    SELECT cluster, job_id, attempt, arg_max(component || ': ' || example, last_seen) AS example
    FROM k8s_pending_reasons
    GROUP BY ALL
),
kueue AS (
    SELECT 'kubernetes' AS source, w.cluster, w.job_id, w.attempt, NULL::VARCHAR AS user_name,
           w.team, w.namespace AS account, w.cluster_queue AS partition, w.queue_name AS queue,
           coalesce(nullif(w.req_gpus, 0), w.gpus) AS gpus, w.created_at AS submit_at,
           w.eligible_at, NULL::DOUBLE AS timelimit_s, w.top_pending_reason AS reason, l.example AS reason_detail, w.as_of
    FROM k8s_workloads AS w
    LEFT JOIN latest AS l USING (cluster, job_id, attempt)
    WHERE w.state = 'PENDING'
)
SELECT source, cluster, job_id, attempt, user_name, team, account, partition, queue, gpus,
       submit_at, eligible_at, timelimit_s, epoch(as_of - eligible_at) AS wait_s, reason, reason_detail, as_of
FROM (SELECT * FROM slurm UNION ALL BY NAME SELECT * FROM kueue)
WHERE ($cluster IS NULL OR cluster = $cluster) AND ($team IS NULL OR team = $team)
ORDER BY wait_s DESC NULLS LAST, cluster, job_id;
