-- When each source of each cluster was last loaded.
SELECT source, cluster, max(loaded_at) AS loaded_at
FROM ingests
GROUP BY ALL
ORDER BY source, cluster;
