-- dcgm_gpu_buckets: per GPU (or MIG instance), label set and 5-minute bucket: activity sums, peak FB, XID events.
-- DCGM_FI_DEV_GPU_UTIL is left out on a MIG GPU instance: DCGM does not support the field there and
-- dcgm-exporter writes 0 for it (NVIDIA/dcgm-exporter#216), which is no activity reading.
-- XID events, per GPU instance, as sql/analytics/xid_events.sql reads them: each change of
-- DCGM_FI_DEV_XID_ERRORS to a non-zero value, and where the GPU has no DCGM_FI_DEV_XID_ERRORS value at
-- a scrape, each rise of a code's DCGM_EXP_XID_ERRORS_COUNT series over the instance's scrape before
-- (a code absent there is 0; a rise of k is k events; a scrape more than 5 minutes after the one
-- before rises from 0), on that scrape's row.
WITH s AS (
    SELECT cluster, host, gpu_uuid, gpu_index, device, mig_profile, mig_instance, hpc_job,
           namespace, pod, ts, metric, value,
           CASE WHEN metric = 'DCGM_FI_DEV_XID_ERRORS' THEN lag(value) OVER (
               PARTITION BY cluster, host, gpu_uuid, mig_instance, metric ORDER BY ts) END AS prev
    FROM raw.dcgm_samples
    WHERE metric IN ('DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_DEV_GPU_UTIL',
                     'DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_XID_ERRORS')
),
last_xid_scrapes AS (
    SELECT DISTINCT cluster, host, gpu_uuid, ts
    FROM raw.dcgm_samples
    WHERE metric = 'DCGM_FI_DEV_XID_ERRORS' AND value IS NOT NULL
),
counts AS (
    SELECT cluster, host, gpu_uuid, gpu_index, device, mig_profile, mig_instance, hpc_job,
           namespace, pod, ts, xid AS code, sum(value) AS n
    FROM raw.dcgm_samples
    WHERE metric = 'DCGM_EXP_XID_ERRORS_COUNT'
    GROUP BY ALL
),
code_counts AS (
    SELECT cluster, host, gpu_uuid, mig_instance, ts, code, sum(n) AS n
    FROM counts
    GROUP BY ALL
),
instance_scrapes AS (
    SELECT *, lag(ts) OVER (PARTITION BY cluster, host, gpu_uuid, mig_instance ORDER BY ts)
               AS prev_ts
    FROM (SELECT DISTINCT cluster, host, gpu_uuid, mig_instance, ts FROM counts)
),
rises AS (
    SELECT c.*,
           c.n - CASE WHEN i.prev_ts >= c.ts - INTERVAL 5 MINUTE THEN coalesce(p.n, 0) ELSE 0 END
               AS rise
    FROM counts AS c
    JOIN instance_scrapes AS i
        ON i.cluster = c.cluster AND i.host = c.host AND i.gpu_uuid = c.gpu_uuid
        AND i.mig_instance IS NOT DISTINCT FROM c.mig_instance AND i.ts = c.ts
    LEFT JOIN code_counts AS p
        ON p.cluster = c.cluster AND p.host = c.host AND p.gpu_uuid = c.gpu_uuid
        AND p.mig_instance IS NOT DISTINCT FROM c.mig_instance AND p.ts = i.prev_ts
        AND p.code IS NOT DISTINCT FROM c.code
),
count_events AS (
    SELECT r.cluster, r.host, r.gpu_uuid, r.gpu_index, r.device, r.mig_profile, r.mig_instance,
           r.hpc_job, r.namespace, r.pod, r.ts, 'xid_count_events' AS metric, r.rise AS value,
           NULL::DOUBLE AS prev
    FROM rises AS r
    ANTI JOIN last_xid_scrapes AS l
        ON l.cluster = r.cluster AND l.host = r.host AND l.gpu_uuid = r.gpu_uuid AND l.ts = r.ts
    WHERE r.rise >= 1
),
rows AS (
    SELECT * FROM s
    UNION ALL BY NAME
    SELECT * FROM count_events
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
                        AND (prev IS NULL OR prev <> value))
       + coalesce(sum(CAST(value AS BIGINT)) FILTER (WHERE metric = 'xid_count_events'), 0)
           AS xid_events
FROM rows
GROUP BY ALL;
