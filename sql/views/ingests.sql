-- ingests: one row per file load (data freshness and rejected counts per source); newest_data_at
-- is the newest record time in the file, not after its load (METRICS.md, "Source freshness").
CREATE OR REPLACE VIEW ingests AS
SELECT ingest_id, source, cluster, file, loaded_at, rows_loaded, rows_rejected,
       TRY_CAST(json_extract_string(info, '$.newest_data_at') AS TIMESTAMPTZ) AS newest_data_at
FROM raw.ingests;
