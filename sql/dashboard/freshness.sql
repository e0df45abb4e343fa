-- Last load per source and cluster, with the files, rows and rejected rows loaded.
SELECT source, cluster, max(loaded_at) AS last_loaded_at, count(*) AS files,
       sum(rows_loaded) AS rows_loaded, sum(rows_rejected) AS rows_rejected
FROM ingests
GROUP BY ALL
ORDER BY source, cluster;
