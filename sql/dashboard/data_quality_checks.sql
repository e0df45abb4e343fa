-- Data-quality checklist: per cluster and check, the findings in the filter window (0 = clean); the listed checks plus every other check with a finding there.
WITH clusters AS (
    SELECT DISTINCT cluster FROM occupancy_hourly
    WHERE ($cluster IS NULL OR cluster = $cluster)
), in_window AS (
    SELECT * FROM data_quality d
    WHERE (d.day IS NULL OR (d.day::TIMESTAMPTZ >= $start AND d.day::TIMESTAMPTZ < $end))
      AND ($cluster IS NULL OR d.cluster IS NULL OR d.cluster = $cluster)
), checks AS (
    SELECT * FROM (VALUES ('gpus_not_tracked'), ('dst_ambiguous_times'), ('dst_nonexistent_times'),
                          ('rejected_rows'), ('capacity_from_observed_nodes'),
                          ('gpu_shards_without_node_state'), ('unattributed_gpu_hours'),
                          ('registry_pool_unmatched'), ('nodes_outside_inventory')) AS t("check")
    UNION
    SELECT DISTINCT "check" FROM in_window
)
SELECT c.cluster, k."check", count(d."check") AS findings, coalesce(sum(d.value), 0) AS value
FROM clusters c CROSS JOIN checks k
LEFT JOIN in_window d
  ON (d.cluster = c.cluster OR d.cluster IS NULL) AND d."check" = k."check"
GROUP BY ALL
ORDER BY c.cluster, k."check";
