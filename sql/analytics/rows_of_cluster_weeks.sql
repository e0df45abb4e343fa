-- The stored rows of the cluster-weeks an incremental build's counts may have changed in: a
-- WHERE clause over a table with cluster and week columns, the pairs bound as two lists of
-- equal length, $clusters and $weeks (NULL equal to NULL: the counts of spells with no eligible
-- time have no week). pipelines.analytics.build's table writer compares only these rows
-- (analytics.time_to_start_counts).
WHERE EXISTS (
    SELECT 1
    FROM (SELECT unnest($clusters) AS c, unnest($weeks) AS w) AS s
    WHERE s.c IS NOT DISTINCT FROM cluster AND s.w IS NOT DISTINCT FROM week
)
