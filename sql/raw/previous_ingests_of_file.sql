-- Earlier loads of the same source file (re-ingest replaces them).
SELECT ingest_id FROM raw.ingests WHERE source = $source AND file = $file;
