-- How many raw.slurm_rows rows lie in each of several ranges of the (cluster, job key) sort key
-- (the table macro slurm_rows_in_ranges of analytics/create_slurm_rows_keyed.sql: range i,
-- 0-based, is [$los[i + 1], $his[i + 1]), $lasts[i + 1]: no upper end). Ranges without a row are
-- left out. Only the key's columns are read.
SELECT _range, count(*) AS n
FROM slurm_rows_in_ranges($los, $his, $lasts)
GROUP BY _range
ORDER BY _range
