-- Boundaries that cut raw.slurm_rows into ranges of job identity holding about equal rows: the
-- distinct values, ascending, of the (cluster, job key) sort key at the $fractions quantiles.
-- The key is cluster, a NUL byte, then the job key of pipelines/core/slurm_identity.py (array
-- task A_T, het component H+O, else JobIDRaw, else JobID): the byte order of the key string is
-- the order of (cluster, job_key), so the ranges come in the core layer's sort order. Every
-- row of one identity has the same key and falls in one range.
WITH keyed AS (
    SELECT coalesce(cluster, '') || chr(0) || coalesce(
        CASE
            WHEN array_job_id IS NOT NULL AND array_task_id IS NOT NULL
                THEN array_job_id || '_' || CAST(array_task_id AS VARCHAR)
            WHEN het_job_id IS NOT NULL AND het_job_offset IS NOT NULL
                THEN het_job_id || '+' || CAST(het_job_offset AS VARCHAR)
            ELSE coalesce(job_id_raw, job_id)
        END, '') AS k
    FROM raw.slurm_rows
)
SELECT DISTINCT unnest(quantile_disc(k, $fractions)) AS bound
FROM keyed
ORDER BY bound
