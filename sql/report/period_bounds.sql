-- Per cluster: the first hour with capacity and the data cut-off, the bounds that
-- decide whether a period is complete (metrics.periods, METRICS.md "Complete periods").
SELECT cluster, min(hour) AS data_from, max(as_of) AS as_of
FROM occupancy_hourly
GROUP BY cluster
ORDER BY cluster;
