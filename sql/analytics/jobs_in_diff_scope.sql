-- The stored core.jobs rows an incremental build compares with its new attempts when the
-- Slurm resolution named the jobs whose rows it changed: every row not from Slurm, every row
-- without a cluster or job id, and the Slurm rows of those jobs (in the temporary table
-- _diff_job_keys: cluster, job_id). Every other Slurm attempt is its stored row, read back from
-- the stored resolution. A WHERE clause: the row diff appends it to its scan of core.jobs; the
-- same slice of the new attempts is selected in polars (pipelines.analytics.incremental).
WHERE source IS DISTINCT FROM 'slurm'
    OR cluster IS NULL
    OR job_id IS NULL
    OR (cluster, job_id) IN (SELECT cluster, job_id FROM temp._diff_job_keys)
