-- raw.slurm_rows with its (cluster, job key) sort key, as a temporary view of the build's
-- connection (analytics/slurm_rows_part.sql, slurm_dirty_keys.sql and, through the table macro
-- below, slurm_rows_in_ranges*.sql read it; slurm_row_bounds.sql uses the key's macro alone).
-- The key is
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
FROM raw.slurm_rows;

-- The keyed rows of several ranges of the sort key, each row with _range, the 0-based index of
-- its range: range i is [los[i + 1], his[i + 1]) (lasts[i + 1]: no upper end); the ranges do not
-- overlap (analytics/slurm_rows_in_ranges.sql and slurm_rows_in_ranges_count.sql read it).
CREATE OR REPLACE TEMP MACRO slurm_rows_in_ranges(los, his, lasts) AS TABLE
SELECT k.*, r._range
FROM slurm_rows_keyed AS k
JOIN (
    SELECT unnest(los) AS lo, unnest(his) AS hi, unnest(lasts) AS last,
        unnest(range(len(los))) AS _range
) AS r ON k._part_key >= r.lo AND (r.last OR k._part_key < r.hi)
