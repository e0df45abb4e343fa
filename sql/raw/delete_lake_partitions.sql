-- Forget the cluster-days reloaded or removed ($_gone: a frame of cluster, partition_date).
DELETE FROM raw.lake_partitions
WHERE (cluster, partition_date) IN (SELECT (cluster, partition_date) FROM _gone)
