-- Boundaries that cut raw.slurm_rows into ranges of job identity holding about equal rows: the
-- distinct values, ascending, of the (cluster, job key) sort key at the $fractions quantiles
-- (the macro slurm_part_key of analytics/create_slurm_rows_keyed.sql). Every row of one identity
-- has the same key and falls in one range.
-- The quantiles are those of a sample of about 100,000 rows: each row is kept where a hash of
-- its rowid, modulo a million, is below $per_million (a million: every row, so a small table is
-- cut exactly; the caller passes 100,000 rows' share of the table). A range needs whole
-- identities, not exactly equal rows (a 100,000-row sample puts about 1,000 sampled keys in each
-- of a hundred ranges), and the exact quantiles hold every key at once: 23.5 million keys, a
-- year of 100,000 GPUs, ran out of the build's 512 MB (BENCHMARKS.md "Stored parts read as
-- runs"). The rows are sampled first and keyed after: the key of the sample only, not of every
-- row. The hash draws the same rows on any number of threads and takes a bound parameter; a
-- reservoir sample took 0.24-0.44 s of a year of 10,000 GPUs' 2.35M rows against 0.08-0.10 s,
-- with parts as even (BENCHMARKS.md "Node reliability from daily signals"). No table depends
-- on where the cuts fall.
SELECT DISTINCT unnest(quantile_disc(slurm_part_key(
    cluster, array_job_id, array_task_id, het_job_id, het_job_offset, job_id_raw, job_id
), $fractions)) AS bound
FROM (
    SELECT cluster, array_job_id, array_task_id, het_job_id, het_job_offset, job_id_raw, job_id
    FROM raw.slurm_rows
    WHERE hash(rowid) % 1000000 < $per_million
)
ORDER BY bound
