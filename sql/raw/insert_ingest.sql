-- Record one file load.
INSERT INTO raw.ingests
VALUES ($ingest_id, $source, $cluster, $file, $sha256, $loaded_at, $rows_loaded, $rows_rejected, $info);
