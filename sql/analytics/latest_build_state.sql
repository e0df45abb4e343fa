-- The last rebuild's id, ingest watermark, fingerprint and cut-offs (no row before the first build).
SELECT build_id, max_ingest_id, fingerprint, as_of_json
FROM analytics.build_state
ORDER BY build_id DESC
LIMIT 1
