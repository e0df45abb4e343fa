-- dcgm_gpu_buckets: per GPU (or MIG instance), label set and 5-minute bucket: activity sums, peak FB, XID changes.
-- DCGM_FI_DEV_GPU_UTIL is left out on a MIG GPU instance: DCGM does not support the field there and
-- dcgm-exporter writes 0 for it (NVIDIA/dcgm-exporter#216), which is no activity reading.
WITH s AS (
    SELECT cluster, host, gpu_uuid, gpu_index, device, mig_profile, mig_instance, hpc_job,
           namespace, pod, ts, metric, value,
           CASE WHEN metric = 'DCGM_FI_DEV_XID_ERRORS' THEN lag(value) OVER (
               PARTITION BY cluster, host, gpu_uuid, mig_instance, metric ORDER BY ts) END AS prev
    FROM raw.dcgm_samples
    WHERE metric IN ('DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_DEV_GPU_UTIL',
                     'DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_XID_ERRORS')
)
SELECT cluster, host, gpu_uuid, gpu_index, device, mig_profile, mig_instance, hpc_job, namespace,
       pod, time_bucket(INTERVAL 5 MINUTE, ts) AS bucket,
       min(ts) + (max(ts) - min(ts)) / 2 AS ts,
       sum(value) FILTER (WHERE metric = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE') AS gr_sum,
       count(value) FILTER (WHERE metric = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE') AS gr_n,
       sum(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND mig_instance IS NULL) / 100.0
           AS util_sum,
       count(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND mig_instance IS NULL)
           AS util_n,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_FB_USED') AS fb_max,
       count(*) FILTER (WHERE metric = 'DCGM_FI_DEV_XID_ERRORS' AND value > 0
                        AND (prev IS NULL OR prev <> value)) AS xid_events
FROM s
GROUP BY ALL;
