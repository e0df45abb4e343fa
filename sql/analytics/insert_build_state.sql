-- Record one rebuild: $build_id, $mode (full | incremental), $max_ingest_id, $fingerprint,
-- $as_of_json and $reason (the plan's: why full, or 'incremental').
INSERT INTO analytics.build_state
    (build_id, built_at, mode, max_ingest_id, fingerprint, as_of_json, reason)
VALUES ($build_id, now(), $mode, $max_ingest_id, $fingerprint, $as_of_json, $reason)
