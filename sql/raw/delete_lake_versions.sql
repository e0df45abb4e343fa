-- Forget the Delta versions the previous load read.
DELETE FROM raw.lake_versions
