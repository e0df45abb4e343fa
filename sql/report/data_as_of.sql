-- Data cut-off per cluster (the latest time its loaded data knows), from occupancy.
SELECT cluster, max(as_of) AS as_of
FROM occupancy_hourly
GROUP BY cluster
ORDER BY cluster;
