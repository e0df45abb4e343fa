-- The highest ingest id loaded so far (0 when nothing was loaded).
SELECT coalesce(max(ingest_id), 0) AS max_ingest_id FROM raw.ingests
