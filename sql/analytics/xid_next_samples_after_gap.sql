-- For incremental builds' plan (pipelines.analytics.incremental): per span of changed DCGM
-- samples (clusters $cs, span ends $his, paired by position), the first sample after the span's
-- end of each last-XID series (DCGM_FI_DEV_XID_ERRORS per cluster, host, GPU and MIG instance)
-- where it lies more than a day after that end: the first sample, and the first valued one
-- (sql/analytics/dcgm_gpu_buckets.sql compares a sample with the series' last sample,
-- sql/analytics/xid_events.sql a valued scrape with the last valued one). The span's samples
-- may have been that sample's predecessor, so whether it is an XID may have changed; a sample
-- within a day of the span the plan takes anyway. ts: UTC.
WITH spans AS (
    SELECT unnest($cs) AS cluster, unnest($his) AS hi
),
nexts AS (
    SELECT s.cluster, s.hi,
        min(d.ts) AS first_ts,
        min(d.ts) FILTER (WHERE d.value IS NOT NULL) AS first_valued_ts
    FROM spans AS s
    JOIN raw.dcgm_samples AS d
      ON d.cluster = s.cluster AND d.metric = 'DCGM_FI_DEV_XID_ERRORS' AND d.ts > s.hi
    GROUP BY s.cluster, s.hi, d.host, d.gpu_uuid, d.mig_instance
)
SELECT DISTINCT cluster, ts
FROM nexts, unnest([first_ts, first_valued_ts]) AS _t(ts)
WHERE ts > hi + INTERVAL 1 DAY
