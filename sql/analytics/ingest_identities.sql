-- Every load as a build reads it: what identifies it (id, kind, cluster, file, content hash and
-- load time). analytics.build_ingests keeps the last build's copy; a row here without its equal
-- there is a load new or changed since, a row there without its equal here a load deleted since
-- (pipelines.analytics.incremental.plan_build).
SELECT ingest_id, source, cluster, file, sha256, loaded_at FROM raw.ingests ORDER BY ingest_id
