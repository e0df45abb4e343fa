-- Wait percentiles by size bucket over the whole window (bucket 'all' = every GPU attempt).
SELECT source, cluster, coalesce(bucket, 'all') AS bucket, jobs, censored,
       p50_s, p90_s, naive_p50_s, naive_p90_s, naive_p99_s
FROM time_to_start_summary
WHERE week IS NULL AND partition IS NULL AND team IS NULL
ORDER BY cluster, bucket;
