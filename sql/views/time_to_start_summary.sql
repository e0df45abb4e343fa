-- time_to_start_summary: naive wait percentiles over started GPU attempts (METRICS.md).
CREATE OR REPLACE VIEW time_to_start_summary AS
SELECT source, cluster, bucket, jobs, naive_p50_s, naive_p90_s, naive_p99_s, as_of
FROM analytics.time_to_start_summary;
