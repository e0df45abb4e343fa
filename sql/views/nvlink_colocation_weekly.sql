-- nvlink_colocation_weekly: per cluster and UTC week, multi-node gangs that fit one NVLink clique (level nvlink: Kubernetes nvidia.com/gpu.clique) and how many ran inside one; multi-node gangs on clique nodes and how many had no topology constraint (METRICS.md "Domain capacity, stranded GPUs and large-job waits"). Every week, from the build's analytics.nvlink_colocation_weekly (sql/analytics/nvlink_colocation_weekly.sql), whole in the serving copy.
CREATE OR REPLACE VIEW nvlink_colocation_weekly AS
SELECT cluster, week, gangs, colocated, colocation_share, multi_node_gangs, unconstrained,
       unconstrained_share, as_of
FROM analytics.nvlink_colocation_weekly LEFT JOIN core.build_cutoffs USING (cluster);
