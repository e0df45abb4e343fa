-- The raw.slurm_rows rows whose (cluster, job key) sort key lies in [$lo, $hi) ($last: no upper
-- end): one part of the core layer's Slurm identity resolution. The key is
-- analytics/slurm_row_bounds.sql's (keep the two alike).
WITH keyed AS (
    SELECT *, coalesce(cluster, '') || chr(0) || coalesce(
        CASE
            WHEN array_job_id IS NOT NULL AND array_task_id IS NOT NULL
                THEN array_job_id || '_' || CAST(array_task_id AS VARCHAR)
            WHEN het_job_id IS NOT NULL AND het_job_offset IS NOT NULL
                THEN het_job_id || '+' || CAST(het_job_offset AS VARCHAR)
            ELSE coalesce(job_id_raw, job_id)
        END, '') AS _part_key
    FROM raw.slurm_rows
)
SELECT * EXCLUDE (_part_key)
FROM keyed
WHERE _part_key >= $lo AND ($last OR _part_key < $hi)
