-- The raw.slurm_rows rows of several ranges of the (cluster, job key) sort key in one scan, each
-- with _range, the 0-based index of its range (the table macro slurm_rows_in_ranges of
-- analytics/create_slurm_rows_keyed.sql: range i is [$los[i + 1], $his[i + 1]), $lasts[i + 1]:
-- no upper end). The rows of one range are those analytics/slurm_rows_part.sql reads for it
-- (the caller splits them by _range), here for one pass over the table instead of one per
-- range. No row order is promised: the identity resolution depends on the rows, not on their
-- order.
SELECT * EXCLUDE (_part_key)
FROM slurm_rows_in_ranges($los, $his, $lasts)
