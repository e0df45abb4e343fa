-- ingests: one row per file load (data freshness and rejected counts per source). The file by
-- its base name: the ad hoc SQL surface shows no path of the machine (raw.ingests keeps it).
-- newest_data_at is the newest record time in the file, not after its load (METRICS.md,
-- "Source freshness").
CREATE OR REPLACE VIEW ingests AS
SELECT ingest_id, source, cluster, parse_filename(file) AS file, loaded_at, rows_loaded,
       rows_rejected,
       TRY_CAST(json_extract_string(info, '$.newest_data_at') AS TIMESTAMPTZ) AS newest_data_at
FROM raw.ingests;
