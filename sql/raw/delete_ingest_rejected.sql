-- Remove the rejected rows of one earlier load of a file.
DELETE FROM raw.rejected_rows WHERE ingest_id = $ingest_id;
