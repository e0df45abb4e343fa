-- The clusters the rows of one sacct load name (a file that names one cluster is read in its zone).
SELECT DISTINCT cluster FROM raw.slurm_rows WHERE ingest_id = $ingest_id;
