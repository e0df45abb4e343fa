-- Raw Slurm rows per ingest, as a build reads them (analytics.build_slurm_ingests keeps them for
-- the next build's analytics/slurm_dirty_keys.sql).
SELECT ingest_id, count(*) AS n FROM raw.slurm_rows GROUP BY ingest_id ORDER BY ingest_id
