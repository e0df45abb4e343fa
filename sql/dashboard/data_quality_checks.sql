-- Data-quality checklist: per cluster and check, the findings in the filter window (0 = clean).
WITH clusters AS (
    SELECT DISTINCT cluster FROM occupancy_hourly
    WHERE ($cluster IS NULL OR cluster = $cluster)
), checks AS (
    SELECT * FROM (VALUES ('gpus_not_tracked'), ('dst_ambiguous_times'), ('dst_nonexistent_times'),
                          ('rejected_rows'), ('capacity_from_observed_nodes'),
                          ('gpu_shards_without_node_state'), ('unattributed_gpu_hours'),
                          ('registry_pool_unmatched')) AS t("check")
)
SELECT c.cluster, k."check", count(d."check") AS findings, coalesce(sum(d.value), 0) AS value
FROM clusters c CROSS JOIN checks k
LEFT JOIN data_quality d
  ON (d.cluster = c.cluster OR d.cluster IS NULL) AND d."check" = k."check"
 AND (d.day IS NULL OR (d.day::TIMESTAMPTZ >= $start AND d.day::TIMESTAMPTZ < $end))
GROUP BY ALL
ORDER BY c.cluster, k."check";
