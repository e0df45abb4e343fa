-- The stored wait spells (analytics.time_to_start_jobs) of the jobs an incremental build
-- recomputes the spells of, counted as metrics.wait_spell_counts counts them: one row per week,
-- source, cluster, partition, team, size bucket, duration and outcome, n spells. The keys are
-- in the temporary table _diff_job_keys (cluster, job_id) that pipelines.warehouse.job_keys_table
-- creates and drops around the statement; these counts are taken out of the stored ones
-- (analytics.time_to_start_counts) before the jobs' new spells' counts are put in.
SELECT week, source, cluster, partition, team, bucket, duration_s, started, count(*) AS n
FROM analytics.time_to_start_jobs
WHERE (cluster, job_id) IN (SELECT cluster, job_id FROM temp._diff_job_keys)
GROUP BY ALL
