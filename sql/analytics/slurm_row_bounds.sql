-- Boundaries that cut raw.slurm_rows into ranges of job identity holding about equal rows: the
-- distinct values, ascending, of the (cluster, job key) sort key at the $fractions quantiles
-- (the macro slurm_part_key of analytics/create_slurm_rows_keyed.sql). Every row of one identity
-- has the same key and falls in one range.
-- The quantiles are those of a reservoir sample of 100,000 rows (every row when there are
-- fewer, so a small table is cut exactly): a range needs whole identities, not exactly equal
-- rows (a 100,000-row sample puts about 1,000 sampled keys in each of a hundred ranges), and the
-- exact quantiles hold every key at once: 23.5 million keys, a year of 100,000 GPUs, ran out of
-- the build's 512 MB (BENCHMARKS.md "Stored parts read as runs"). The rows are sampled first
-- and keyed after: the key of the sample only, not of every row (on a year of 10,000 GPUs,
-- 2.35M rows: 0.30 s, against 0.46 s keying every row; the same sample, so the same cuts).
-- Seeded, so the cuts repeat on one thread; DuckDB does not promise it on several, and no table
-- depends on where they fall.
SELECT DISTINCT unnest(quantile_disc(slurm_part_key(
    cluster, array_job_id, array_task_id, het_job_id, het_job_offset, job_id_raw, job_id
), $fractions)) AS bound
FROM (
    SELECT cluster, array_job_id, array_task_id, het_job_id, het_job_offset, job_id_raw, job_id
    FROM raw.slurm_rows USING SAMPLE reservoir(100000 ROWS) REPEATABLE (7)
)
ORDER BY bound
