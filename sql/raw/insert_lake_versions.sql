-- The Delta versions just read (_versions: table_name, version).
INSERT INTO raw.lake_versions BY NAME SELECT * FROM _versions
