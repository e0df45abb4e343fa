-- The next free ingest id.
SELECT coalesce(max(ingest_id), 0) + 1 FROM raw.ingests;
