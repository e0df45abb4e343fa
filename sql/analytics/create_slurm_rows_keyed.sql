-- raw.slurm_rows with its (cluster, job key) sort key, as a temporary view of the build's
-- connection (analytics/slurm_rows_part.sql, slurm_rows_in_ranges*.sql and slurm_dirty_keys.sql
-- read it; slurm_row_bounds.sql uses the macro alone). The key is
-- cluster, a NUL byte, then the job key of pipelines/core/slurm_identity.py (array task A_T, het
-- component H+O, else JobIDRaw, else JobID): the byte order of the key string is the order of
-- (cluster, job_key), so ranges of it come in the core layer's sort order, and every row of one
-- identity has the same key. The key is a temporary macro of the same columns, so that a query
-- can take it of some rows only (slurm_row_bounds.sql: of a sample, not of every row).
CREATE OR REPLACE TEMP MACRO slurm_part_key(
    cluster, array_job_id, array_task_id, het_job_id, het_job_offset, job_id_raw, job_id
) AS coalesce(cluster, '') || chr(0) || coalesce(
    CASE
        WHEN array_job_id IS NOT NULL AND array_task_id IS NOT NULL
            THEN array_job_id || '_' || CAST(array_task_id AS VARCHAR)
        WHEN het_job_id IS NOT NULL AND het_job_offset IS NOT NULL
            THEN het_job_id || '+' || CAST(het_job_offset AS VARCHAR)
        ELSE coalesce(job_id_raw, job_id)
    END, '');

CREATE OR REPLACE TEMP VIEW slurm_rows_keyed AS
SELECT *, slurm_part_key(
    cluster, array_job_id, array_task_id, het_job_id, het_job_offset, job_id_raw, job_id
) AS _part_key
FROM raw.slurm_rows
