-- One job's GPUs over time: per GPU (or MIG instance) and 5-minute bucket, activity (gpu_activity) and peak memory used (DCGM_FI_DEV_FB_USED, MiB).
-- Only rows the pipeline tied to one attempt of the job (hpc_job label, pod, GPU map, whole node).
WITH g AS (
    SELECT cluster, host, gpu_uuid, mig_instance, bucket, attempt, activity, signal, gpus
    FROM gpu_activity
    WHERE cluster = $cluster AND job_id = $job_id
      AND attribution IN ('label_hpc_job', 'pod', 'gres_index', 'whole_node')
),
m AS (
    SELECT d.gpu_uuid, d.mig_instance, time_bucket(INTERVAL 5 MINUTE, d.ts) AS bucket,
           max(d.value) AS fb_used_mib
    FROM dcgm_samples AS d
    WHERE d.cluster = $cluster AND d.metric = 'DCGM_FI_DEV_FB_USED'
      AND d.gpu_uuid IN (SELECT gpu_uuid FROM g)
      AND d.ts >= (SELECT min(bucket) FROM g)
      AND d.ts < (SELECT max(bucket) FROM g) + INTERVAL 5 MINUTE
    GROUP BY ALL
)
SELECT g.attempt, g.host, g.gpu_uuid, g.mig_instance, g.bucket, g.activity, g.signal, g.gpus,
       m.fb_used_mib
FROM g
LEFT JOIN m
  ON m.gpu_uuid = g.gpu_uuid AND m.mig_instance IS NOT DISTINCT FROM g.mig_instance
 AND m.bucket = g.bucket
ORDER BY g.attempt, g.gpu_uuid, g.mig_instance, g.bucket;
