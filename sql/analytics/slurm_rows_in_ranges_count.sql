-- How many raw.slurm_rows rows lie in each of several ranges of the (cluster, job key) sort key
-- (the temporary view of analytics/create_slurm_rows_keyed.sql): range i (0-based) is
-- [$los[i + 1], $his[i + 1]) ($lasts[i + 1]: no upper end). Ranges without a row are left out.
-- Only the key's columns are read.
SELECT r._range, count(*) AS n
FROM slurm_rows_keyed AS k
JOIN (
    SELECT unnest($los) AS lo, unnest($his) AS hi, unnest($lasts) AS last,
        unnest(range(len($los))) AS _range
) AS r ON k._part_key >= r.lo AND (r.last OR k._part_key < r.hi)
GROUP BY r._range
ORDER BY r._range
