-- Raw Slurm rows per ingest as a build reads them, with the ingest's file hash and load time:
-- analytics.build_slurm_ingests keeps them, and the next build resolves again the identities of
-- every ingest whose row here differs (pipelines.analytics.incremental.unchanged_slurm_ingests;
-- the id of a deleted load can be given again, and a replaced lake partition changes its rows).
SELECT
    r.ingest_id, count(*) AS n, any_value(i.sha256) AS sha256, any_value(i.loaded_at) AS loaded_at
FROM raw.slurm_rows AS r
LEFT JOIN raw.ingests AS i USING (ingest_id)
GROUP BY r.ingest_id
ORDER BY r.ingest_id
