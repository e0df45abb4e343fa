-- Per source and cluster: the newest data time (the newest record time of its loaded files, not
-- after their load) beside the last load, with the files, rows and
-- rejected rows loaded (METRICS.md, "Source freshness").
SELECT source, cluster,
       max(newest_data_at) AS newest_data_at,
       max(loaded_at) AS last_loaded_at, count(*) AS files,
       sum(rows_loaded) AS rows_loaded, sum(rows_rejected) AS rows_rejected
FROM ingests
GROUP BY ALL
ORDER BY source, cluster;
