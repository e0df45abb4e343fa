-- job_gpu_summary: one row per GPU allocation attempt with its telemetry summary.
CREATE OR REPLACE VIEW job_gpu_summary AS
SELECT source, cluster, job_id, attempt, team, gpus, gpu_s, observed_gpu_s, mean_activity,
       idle_gpu_s, peak_fb_used_mib, xid_events, as_of
FROM analytics.job_gpu_summary LEFT JOIN core.build_cutoffs USING (cluster);
