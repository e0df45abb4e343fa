-- Kueue ClusterQueues giving quota of accelerator resources that count no GPU: one row per cluster and ClusterQueue, the resources of all its snapshots (sorted, comma-separated).
SELECT cluster, name, string_agg(DISTINCT resource, ',' ORDER BY resource) AS uncounted_resources
FROM (
    SELECT cluster, name, unnest(string_split(uncounted_resources, ',')) AS resource
    FROM raw.kueue_cluster_queues
    WHERE uncounted_resources IS NOT NULL
)
GROUP BY cluster, name
ORDER BY cluster, name;
