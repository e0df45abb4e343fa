-- Whether analytics.gpu_activity holds 5-minute activity attributed to one attempt
-- ($one_job attributions) of cluster $cluster in a bucket whose UTC day is not one of $days:
-- the incremental side of the one hourly-DCGM fallback rule (a cluster whose attributed 5-minute
-- activity is empty over all time uses its hourly aggregates).
SELECT count(*) AS n
FROM (
    SELECT 1
    FROM analytics.gpu_activity
    WHERE cluster = $cluster
      AND list_contains($one_job::VARCHAR[], attribution)
      AND attempt IS NOT NULL
      AND activity IS NOT NULL
      AND NOT list_contains($days::DATE[], CAST(timezone('UTC', bucket) AS DATE))
    LIMIT 1
);
