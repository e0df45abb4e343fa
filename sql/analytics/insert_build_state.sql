-- Record one rebuild: $build_id, $mode (full | incremental), $max_ingest_id, $fingerprint, $as_of_json.
INSERT INTO analytics.build_state VALUES ($build_id, now(), $mode, $max_ingest_id, $fingerprint, $as_of_json)
