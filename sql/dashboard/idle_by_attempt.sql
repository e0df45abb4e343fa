-- Idle allocated time per attempt: GPU-hours in 5-minute buckets with mean DCGM activity < $theta (leaf 8, allocated_idle).
-- Samples are attributed as the pipeline does: the `hpc_job` label (Slurm), else the pod's
-- attempt (the pod itself before Workloads are ingested, else its Kueue Workload, named
-- `job-<workload_name>-<5-character hash>`), else `<namespace>/<pod>`. Attempts in a loss leaf
-- (3-7) are left out, as in the waterfall; running ones are counted up to `as_of`.
WITH pod_jobs AS (
    SELECT p.cluster, p.namespace, p.name AS pod,
           min(j.job_id) FILTER (WHERE j.job_id = p.namespace || '/' || p.name) AS pod_job,
           min(j.job_id) AS workload_job
    FROM k8s_pods p
    JOIN jobs j
      ON j.source = 'kubernetes' AND j.cluster = p.cluster
     AND (j.job_id = p.namespace || '/' || p.name
          OR j.job_id LIKE p.namespace || '/job-' || p.workload_name || '-_____')
    GROUP BY ALL
), activity AS (
    SELECT s.cluster,
           coalesce(s.hpc_job, pj.pod_job, pj.workload_job, s.namespace || '/' || s.pod) AS job_id,
           time_bucket(INTERVAL 5 MINUTE, s.ts) AS bucket,
           avg(s.value) AS activity, count(DISTINCT s.gpu_uuid)::DOUBLE AS sampled_gpus
    FROM dcgm_samples s
    LEFT JOIN pod_jobs pj ON pj.cluster = s.cluster AND pj.namespace = s.namespace AND pj.pod = s.pod
    WHERE s.metric = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' AND s.value IS NOT NULL
      AND (s.hpc_job IS NOT NULL OR s.pod IS NOT NULL)
      AND ($cluster IS NULL OR s.cluster = $cluster)
      AND s.ts >= $start AND s.ts < $end
    GROUP BY ALL
), attempts AS (
    SELECT cluster, job_id, attempt, team, partition, state, gpus, gpu_type, start_at,
           least(coalesce(end_at, as_of), as_of) AS stop_at
    FROM jobs
    WHERE gpus > 0
      AND ($cluster IS NULL OR cluster = $cluster)
      AND ($team IS NULL OR team = $team)
      AND (end_at IS NULL OR end_at > as_of
           OR state NOT IN ('NODE_FAIL', 'BOOT_FAIL', 'FAILED', 'OUT_OF_MEMORY', 'PREEMPTED',
                            'REQUEUED', 'TIMEOUT', 'DEADLINE', 'CANCELLED', 'REVOKED'))
), buckets AS (
    SELECT a.cluster, a.job_id, a.attempt, a.team, a.partition, a.state, a.gpus, a.gpu_type,
           a.start_at, s.activity, s.activity < $theta AS is_idle,
           least(s.sampled_gpus, a.gpus)
             * greatest(0, epoch(least(s.bucket + INTERVAL 5 MINUTE, a.stop_at))
                           - epoch(greatest(s.bucket, a.start_at))) AS gpu_s
    FROM activity s
    JOIN attempts a
      ON s.cluster = a.cluster AND s.job_id = a.job_id
     AND s.bucket >= time_bucket(INTERVAL 5 MINUTE, a.start_at) AND s.bucket < a.stop_at
)
SELECT cluster, job_id, attempt, team, partition, state, gpus, gpu_type, start_at,
       sum(gpu_s) FILTER (WHERE is_idle) / 3600.0 AS idle_gpu_h,
       sum(gpu_s) / 3600.0 AS observed_gpu_h,
       sum(gpu_s) FILTER (WHERE is_idle) / nullif(sum(gpu_s), 0) AS idle_share,
       avg(activity) AS mean_activity
FROM buckets
GROUP BY ALL
HAVING sum(gpu_s) FILTER (WHERE is_idle) > 0
ORDER BY idle_gpu_h DESC, cluster, job_id, attempt;
