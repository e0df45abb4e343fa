-- The wait-spell counts (metrics.survival.wait_spell_counts over week, source, cluster, partition,
-- team and bucket) of cluster $cluster's stored spells (analytics.time_to_start_jobs), leaving
-- out the jobs in the temporary table _diff_job_keys (cluster, job_id; created by
-- pipelines.warehouse.job_keys_table around the statement), whose spells the incremental build
-- computes again: what the Kaplan-Meier percentiles read of every other job. NOT EXISTS, not
-- NOT IN: a NULL key must not empty the result.
SELECT week, source, cluster, partition, team, bucket, duration_s, started, count(*) AS n
FROM analytics.time_to_start_jobs AS s
WHERE s.cluster = $cluster
    AND NOT EXISTS (
        SELECT 1 FROM temp._diff_job_keys AS k WHERE k.cluster = s.cluster AND k.job_id = s.job_id
    )
GROUP BY ALL
