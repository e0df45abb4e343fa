-- The format one load's reader names in raw.ingests.info (sacct: parsable, parsable2, json).
SELECT json_extract_string(info, '$.format') FROM raw.ingests WHERE ingest_id = $ingest_id;
