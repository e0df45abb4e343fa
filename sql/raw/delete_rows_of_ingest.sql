-- Remove the parsed rows of one earlier load of a file. {table} is filled from a fixed list of raw tables.
DELETE FROM {table} WHERE ingest_id = $ingest_id;
