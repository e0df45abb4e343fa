-- The raw.slurm_rows rows of several ranges of the (cluster, job key) sort key in one scan (the
-- temporary view of analytics/create_slurm_rows_keyed.sql), each row with _range, the 0-based
-- index of its range: range i is [$los[i + 1], $his[i + 1]) ($lasts[i + 1]: no upper end); the
-- ranges do not overlap. The rows of one range are those analytics/slurm_rows_part.sql reads
-- for it (the caller splits them by _range), here for one pass over the table instead of one
-- per range. No row order is promised: the identity resolution depends on the rows, not on
-- their order.
SELECT k.* EXCLUDE (_part_key), r._range
FROM slurm_rows_keyed AS k
JOIN (
    SELECT unnest($los) AS lo, unnest($his) AS hi, unnest($lasts) AS last,
        unnest(range(len($los))) AS _range
) AS r ON k._part_key >= r.lo AND (r.last OR k._part_key < r.hi)
