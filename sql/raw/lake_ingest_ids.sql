-- Every load in the warehouse, with its source (which loads are of input files).
SELECT ingest_id, source FROM raw.ingests ORDER BY ingest_id
