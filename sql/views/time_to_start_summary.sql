-- time_to_start_summary: Kaplan-Meier (censored) and naive wait percentiles; NULL group = all.
CREATE OR REPLACE VIEW time_to_start_summary AS
SELECT week, source, cluster, partition, team, bucket, jobs, censored, excluded,
       p50_s, p90_s, p99_s, reason, naive_p50_s, naive_p90_s, naive_p99_s, as_of
FROM analytics.time_to_start_summary LEFT JOIN core.build_cutoffs USING (cluster);
