-- Boundaries that cut raw.slurm_rows into ranges of job identity holding about equal rows: the
-- distinct values, ascending, of the (cluster, job key) sort key at the $fractions quantiles
-- (the temporary view of analytics/create_slurm_rows_keyed.sql). Every row of one identity has
-- the same key and falls in one range.
-- The quantiles are those of a reservoir sample of 100,000 keys (every key when there are
-- fewer, so a small table is cut exactly): a range needs whole identities, not exactly equal
-- rows (a 100,000-key sample puts about 1,000 sampled keys in each of a hundred ranges), and the
-- exact quantiles hold every key at once: 23.5 million keys, a year of 100,000 GPUs, ran out of
-- the build's 512 MB (BENCHMARKS.md "Stored parts read as runs"). Seeded, so the cuts repeat on
-- one thread; DuckDB does not promise it on several, and no table depends on where they fall.
SELECT DISTINCT unnest(quantile_disc(_part_key, $fractions)) AS bound
FROM (SELECT _part_key FROM slurm_rows_keyed USING SAMPLE reservoir(100000 ROWS) REPEATABLE (7))
ORDER BY bound
