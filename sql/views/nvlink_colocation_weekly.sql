-- nvlink_colocation_weekly: per cluster and UTC week, multi-node gangs that fit one NVLink clique (level nvlink: Kubernetes nvidia.com/gpu.clique) and how many ran inside one (METRICS.md "Domain capacity, stranded GPUs and large-job waits").
CREATE OR REPLACE VIEW nvlink_colocation_weekly AS
SELECT cluster,
       CAST(date_trunc('week', start_at AT TIME ZONE 'UTC') AS DATE) AS week,
       count(*) AS gangs,
       count(*) FILTER (WHERE domains_used = 1) AS colocated,
       count(*) FILTER (WHERE domains_used = 1) / count(*) AS colocation_share,
       max(as_of) AS as_of
FROM analytics.job_placement LEFT JOIN core.build_cutoffs USING (cluster)
WHERE level = 'nvlink' AND nodes > 1 AND nodes <= domain_size
GROUP BY cluster, week;
