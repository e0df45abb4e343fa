-- nvlink_colocation_weekly: per cluster and UTC week, multi-node gangs that fit one NVLink clique (level nvlink: Kubernetes nvidia.com/gpu.clique) and how many ran inside one; multi-node gangs on clique nodes and how many had no topology constraint (METRICS.md "Domain capacity, stranded GPUs and large-job waits").
CREATE OR REPLACE VIEW nvlink_colocation_weekly AS
SELECT cluster,
       CAST(date_trunc('week', start_at AT TIME ZONE 'UTC') AS DATE) AS week,
       count(*) FILTER (WHERE nodes <= domain_size) AS gangs,
       count(*) FILTER (WHERE nodes <= domain_size AND domains_used = 1) AS colocated,
       count(*) FILTER (WHERE nodes <= domain_size AND domains_used = 1)
           / nullif(count(*) FILTER (WHERE nodes <= domain_size), 0) AS colocation_share,
       count(*) AS multi_node_gangs,
       count(*) FILTER (WHERE topology_request IS NULL) AS unconstrained,
       count(*) FILTER (WHERE topology_request IS NULL) / count(*) AS unconstrained_share,
       max(as_of) AS as_of
FROM analytics.job_placement LEFT JOIN core.build_cutoffs USING (cluster)
WHERE level = 'nvlink' AND nodes > 1
GROUP BY cluster, week;
