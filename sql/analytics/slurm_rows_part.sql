-- The raw.slurm_rows rows whose (cluster, job key) sort key lies in [$lo, $hi) ($last: no upper
-- end): one part of the core layer's Slurm identity resolution (the temporary view of
-- analytics/create_slurm_rows_keyed.sql).
SELECT * EXCLUDE (_part_key)
FROM slurm_rows_keyed
WHERE _part_key >= $lo AND ($last OR _part_key < $hi)
