-- The core.slurm_jobs rows of one part of the identity resolution: (cluster, job key) sort key
-- in [$lo, $hi) ($last: no upper end), the key built as analytics/create_slurm_rows_keyed.sql
-- builds it from the raw rows (so a part's resolved rows and its stored rows are the same
-- identities). A WHERE clause: the row diff of core.slurm_jobs appends it to its scan.
WHERE coalesce(cluster, '') || chr(0) || coalesce(job_key, '') >= $lo
    AND ($last OR coalesce(cluster, '') || chr(0) || coalesce(job_key, '') < $hi)
    -- The same range again in terms DuckDB pushes into the scan ($lo and $hi split at their
    -- NUL byte), so that its zone maps skip the row groups outside it: implied by the two
    -- lines above, they change no row, only what is read (as in stored_part_attempts.sql).
    AND ($lo_cluster = '' OR cluster >= $lo_cluster)
    AND ($last OR $lo_cluster = '' OR cluster <= $hi_cluster)
    AND ($last OR $lo_cluster = '' OR $lo_cluster <> $hi_cluster OR $lo_job_key = ''
        OR (job_key >= $lo_job_key AND job_key < $hi_job_key))
