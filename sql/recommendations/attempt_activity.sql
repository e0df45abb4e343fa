-- attempt_activity: mean GPU activity per allocation attempt and 5-minute bucket (label-attributed DCGM samples).
WITH samples AS (
    SELECT cluster, coalesce(hpc_job, namespace || '/' || pod) AS job_id,
           time_bucket(INTERVAL 5 MINUTE, ts) AS bucket, avg(value) AS activity,
           count(DISTINCT gpu_uuid)::DOUBLE AS gpus
    FROM dcgm_samples
    WHERE metric = $metric AND value IS NOT NULL AND ts >= $start
      AND (hpc_job IS NOT NULL OR pod IS NOT NULL)
    GROUP BY ALL
)
SELECT s.cluster, s.job_id, j.attempt, s.bucket, s.activity, s.gpus
FROM samples s
JOIN jobs j ON j.cluster = s.cluster AND j.job_id = s.job_id
 AND s.bucket >= time_bucket(INTERVAL 5 MINUTE, j.start_at)
 AND (j.end_at IS NULL OR s.bucket < j.end_at)
QUALIFY row_number() OVER (PARTITION BY s.cluster, s.job_id, s.bucket ORDER BY j.start_at DESC) = 1
