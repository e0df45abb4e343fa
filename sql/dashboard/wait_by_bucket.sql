-- Naive wait percentiles by size bucket (bucket NULL = all GPU attempts of the cluster).
SELECT source, cluster, coalesce(bucket, 'all') AS bucket, jobs,
       naive_p50_s, naive_p90_s, naive_p99_s
FROM time_to_start_summary
ORDER BY cluster, bucket;
