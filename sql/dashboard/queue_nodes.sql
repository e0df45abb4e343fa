-- GPU nodes per cluster and partition (the scheduler model's nodes for the Queue page's start estimates).
SELECT cluster, host, partition, gpus
FROM nodes
WHERE partition IS NOT NULL AND gpus > 0 AND ($cluster IS NULL OR cluster = $cluster)
ORDER BY cluster, host;
