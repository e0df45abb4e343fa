-- time_to_start_jobs: one waiting spell per attempt or never-started job; censored = not started.
CREATE OR REPLACE VIEW time_to_start_jobs AS
SELECT source, cluster, job_id, attempt, team, partition, state, bucket, size_gpus, week,
       eligible_at, start_at, end_at, duration_s AS wait_s, started,
       (started = false) AS censored, as_of
FROM analytics.time_to_start_jobs LEFT JOIN core.build_cutoffs USING (cluster);
