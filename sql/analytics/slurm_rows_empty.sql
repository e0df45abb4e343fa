-- The columns of raw.slurm_rows and no row (the build reads the rows in parts).
SELECT * FROM raw.slurm_rows LIMIT 0
