-- The attempts of one job ($job_id = JobID or JobIDRaw; $cluster NULL = any) with DCGM summaries.
-- Activity: 5-minute (UTC) means per GPU of DCGM_FI_PROF_GR_ENGINE_ACTIVE, else GPU_UTIL / 100 (not
-- on a MIG GPU instance, where DCGM does not support GPU_UTIL);
-- a GPU-bucket counts its overlap with the attempt (× the MIG slice's fraction of the GPU).
-- Which GPU-buckets are the attempt's is the pipeline's attribution (`gpu_activity`, rows tied to
-- one attempt: hpc_job label, pod → its Kubernetes workload, Slurm GPU map, whole node), so a
-- Kubernetes job (pods grouped by owner: `namespace/<workload>`, never a pod's own name) and a
-- Slurm job seen without labels get the same telemetry as `job_gpu_summary` and the Waste page.
WITH a AS (
    SELECT source, cluster, job_id, job_id_raw, attempt, team, account, user_name, partition,
           qos, state, gpus, req_gpus, gpu_type, submit_at, eligible_at, start_at, end_at,
           wait_s, run_s, gpu_s, node_list, timelimit_s, exit_code, as_of,
           coalesce(end_at, as_of) AS stop_at
    FROM jobs
    WHERE (job_id = $job_id OR job_id_raw = $job_id)
      AND (CAST($cluster AS VARCHAR) IS NULL OR cluster = $cluster)
),
g AS (
    SELECT DISTINCT a.cluster, a.job_id, a.attempt, a.start_at, a.stop_at, ga.gpu_uuid,
           ga.mig_instance, ga.bucket
    FROM a
    JOIN gpu_activity AS ga
      ON ga.cluster = a.cluster AND ga.job_id = a.job_id AND ga.attempt = a.attempt
    WHERE ga.attribution IN ('label_hpc_job', 'pod', 'gres_index', 'whole_node')
),
s AS (
    SELECT g.cluster, g.job_id, g.attempt, g.start_at, g.stop_at, d.gpu_uuid, d.mig_instance,
           d.mig_profile, d.metric, d.ts, d.value
    FROM g
    JOIN dcgm_samples AS d
      ON d.cluster = g.cluster AND d.gpu_uuid = g.gpu_uuid
     AND d.mig_instance IS NOT DISTINCT FROM g.mig_instance
     AND time_bucket(INTERVAL 5 MINUTE, d.ts) = g.bucket
     AND d.ts >= g.start_at AND d.ts < g.stop_at
    WHERE d.metric IN ('DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_DEV_GPU_UTIL',
                       'DCGM_FI_DEV_FB_USED')
),
b AS (
    SELECT cluster, job_id, attempt, gpu_uuid, mig_instance,
           time_bucket(INTERVAL 5 MINUTE, ts) AS bucket,
           any_value(start_at) AS start_at, any_value(stop_at) AS stop_at,
           any_value(mig_profile) AS mig_profile,
           avg(value) FILTER (WHERE metric = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE') AS gr,
           -- not on a MIG GPU instance, where DCGM does not support it (0 as written)
           avg(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND mig_instance IS NULL)
               / 100.0 AS util
    FROM s
    GROUP BY cluster, job_id, attempt, gpu_uuid, mig_instance, bucket
),
-- The MIG fraction of METRICS.md ("MIG fraction", metrics/mig.py): the profile token anywhere in
-- the label, K/4 on an A30 (1g.6gb, 2g.12gb, 4g.24gb), K/7 for K in 1, 2, 3, 4, 7 elsewhere; a
-- GPU instance's K (DCGM samples cover the GPU instance); no or an impossible profile = 1.
p AS (
    SELECT b.*, pr.gi, pr.mem, pr.ci
    FROM b
    CROSS JOIN LATERAL (
        SELECT TRY_CAST(nullif(regexp_extract(b.mig_profile, $mig_pattern, 2), '') AS INTEGER) AS gi,
               TRY_CAST(nullif(regexp_extract(b.mig_profile, $mig_pattern, 3), '') AS INTEGER) AS mem,
               TRY_CAST(nullif(regexp_extract(b.mig_profile, $mig_pattern, 1), '') AS INTEGER) AS ci
    ) AS pr
),
f AS (
    SELECT cluster, job_id, attempt, gpu_uuid, mig_instance, bucket, start_at, stop_at, gr, util,
           coalesce(CASE WHEN ci IS NOT NULL AND (ci < 1 OR ci > gi) THEN NULL
                         WHEN (gi = 1 AND mem = 6) OR (gi = 2 AND mem = 12) OR (gi = 4 AND mem = 24)
                             THEN gi / 4.0
                         WHEN gi IN (1, 2, 3, 4, 7) AND mem > 0 THEN gi / 7.0 END,
                    1.0) AS gpu_fraction
    FROM p
),
w AS (
    SELECT *, coalesce(gr, util) AS activity,
           CASE WHEN gr IS NOT NULL THEN 'DCGM_FI_PROF_GR_ENGINE_ACTIVE'
                WHEN util IS NOT NULL THEN 'DCGM_FI_DEV_GPU_UTIL' END AS signal,
           greatest(0.0, epoch(least(bucket + INTERVAL 5 MINUTE, stop_at))
                         - epoch(greatest(bucket, start_at))) * gpu_fraction AS obs_s
    FROM f
),
t AS (
    SELECT cluster, job_id, attempt,
           count(DISTINCT gpu_uuid) FILTER (WHERE activity IS NOT NULL) AS gpus_observed,
           sum(obs_s) FILTER (WHERE activity IS NOT NULL) AS observed_gpu_s,
           sum(activity * obs_s) FILTER (WHERE activity IS NOT NULL)
               / nullif(sum(obs_s) FILTER (WHERE activity IS NOT NULL), 0) AS mean_activity,
           coalesce(sum(obs_s) FILTER (WHERE activity < $idle_below), 0.0) AS idle_gpu_s,
           string_agg(DISTINCT signal, ',' ORDER BY signal) AS signal
    FROM w
    GROUP BY cluster, job_id, attempt
),
m AS (
    SELECT cluster, job_id, attempt, max(value) AS peak_fb_used_mib
    FROM s
    WHERE metric = 'DCGM_FI_DEV_FB_USED'
    GROUP BY cluster, job_id, attempt
)
SELECT a.source, a.cluster, a.job_id, a.job_id_raw, a.attempt, a.team, a.account, a.user_name,
       a.partition, a.qos, a.state, a.gpus, a.req_gpus, a.gpu_type, a.submit_at, a.eligible_at,
       a.start_at, a.end_at, a.wait_s, a.run_s, a.gpu_s,
       -- Σ over the pieces of GPUs the attempt held (job_holds; one piece: gpus over its span)
       (SELECT sum(h.gpus * epoch(coalesce(h.end_at, a.as_of) - h.start_at))
        FROM job_holds h
        WHERE h.cluster = a.cluster AND h.job_id = a.job_id AND h.attempt = a.attempt)
           AS gpu_s_so_far,
       a.node_list, a.timelimit_s, a.exit_code, a.as_of,
       t.gpus_observed, t.observed_gpu_s, t.mean_activity, t.idle_gpu_s, t.signal,
       m.peak_fb_used_mib
FROM a
LEFT JOIN t ON t.cluster = a.cluster AND t.job_id = a.job_id AND t.attempt = a.attempt
LEFT JOIN m ON m.cluster = a.cluster AND m.job_id = a.job_id AND m.attempt = a.attempt
ORDER BY a.cluster, a.attempt, a.start_at;
