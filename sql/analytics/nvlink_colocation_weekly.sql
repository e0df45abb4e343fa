-- analytics.nvlink_colocation_weekly, computed by the build from analytics.job_placement once it
-- is written (the view adds the cut-off): per cluster and UTC week, multi-node gangs that fit one
-- NVLink clique and how many ran inside one; multi-node gangs on clique nodes and how many had
-- no topology constraint. Stored, not a view over job_placement, so that the serving copy can
-- cut job_placement to its recent rows and still publish every week.
SELECT cluster,
       CAST(date_trunc('week', start_at AT TIME ZONE 'UTC') AS DATE) AS week,
       count(*) FILTER (WHERE nodes <= domain_size) AS gangs,
       count(*) FILTER (WHERE nodes <= domain_size AND domains_used = 1) AS colocated,
       count(*) FILTER (WHERE nodes <= domain_size AND domains_used = 1)
           / nullif(count(*) FILTER (WHERE nodes <= domain_size), 0) AS colocation_share,
       count(*) AS multi_node_gangs,
       count(*) FILTER (WHERE topology_request IS NULL) AS unconstrained,
       count(*) FILTER (WHERE topology_request IS NULL) / count(*) AS unconstrained_share
FROM analytics.job_placement
WHERE level = 'nvlink' AND nodes > 1
GROUP BY cluster, week
ORDER BY cluster, week
