-- large_job_wait_causes: per large job (attempt or never-started job), its eligible wait split into quota, priority, fragmentation and other delay, exact or counterfactual (METRICS.md "Domain capacity, stranded GPUs and large-job waits").
CREATE OR REPLACE VIEW large_job_wait_causes AS
SELECT cluster, job_id, attempt, team, req_gpus, req_nodes, eligible_at, start_at, wait_s,
       quota_s, priority_s, fragmentation_s, other_s, blocked_idle_gpu_s, basis, as_of
FROM analytics.large_job_wait_causes LEFT JOIN core.build_cutoffs USING (cluster);
