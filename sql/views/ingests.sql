-- ingests: one row per file load (data freshness and rejected counts per source); the file by
-- its base name: the ad hoc SQL surface shows no path of the machine (raw.ingests keeps it).
CREATE OR REPLACE VIEW ingests AS
SELECT ingest_id, source, cluster, parse_filename(file) AS file, loaded_at, rows_loaded,
       rows_rejected
FROM raw.ingests;
