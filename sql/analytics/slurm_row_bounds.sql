-- Boundaries that cut raw.slurm_rows into ranges of job identity holding about equal rows: the
-- distinct values, ascending, of the (cluster, job key) sort key at the $fractions quantiles
-- (the temporary view of analytics/create_slurm_rows_keyed.sql). Every row of one identity has
-- the same key and falls in one range.
SELECT DISTINCT unnest(quantile_disc(_part_key, $fractions)) AS bound
FROM slurm_rows_keyed
ORDER BY bound
