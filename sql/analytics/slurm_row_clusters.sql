-- The clusters raw.slurm_rows names (the build reads the rows themselves in parts).
SELECT DISTINCT cluster FROM raw.slurm_rows WHERE cluster IS NOT NULL ORDER BY cluster
