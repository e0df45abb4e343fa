-- The stored rows of the jobs an incremental build recomputed: a WHERE clause over a table with
-- cluster and job_id columns, the keys in the temporary table _diff_job_keys (cluster, job_id)
-- that pipelines.warehouse.diff_job_rows creates and drops around the statement.
WHERE (cluster, job_id) IN (SELECT cluster, job_id FROM temp._diff_job_keys)
