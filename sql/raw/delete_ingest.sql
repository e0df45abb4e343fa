-- Remove the bookkeeping row of one earlier load of a file.
DELETE FROM raw.ingests WHERE ingest_id = $ingest_id;
