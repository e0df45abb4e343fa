-- The core.slurm_jobs rows of one part of the identity resolution: (cluster, job key) sort key
-- in [$lo, $hi) ($last: no upper end), the key built as analytics/create_slurm_rows_keyed.sql
-- builds it from the raw rows (so a part's resolved rows and its stored rows are the same
-- identities). A WHERE clause: the row diff of core.slurm_jobs appends it to its scan.
WHERE coalesce(cluster, '') || chr(0) || coalesce(job_key, '') >= $lo
    AND ($last OR coalesce(cluster, '') || chr(0) || coalesce(job_key, '') < $hi)
