-- ingests: one row per file load (data freshness and rejected counts per source).
CREATE OR REPLACE VIEW ingests AS
SELECT ingest_id, source, cluster, file, loaded_at, rows_loaded, rows_rejected
FROM raw.ingests;
