-- analytics.build_state: one row per rebuild (watermark, fingerprint, cut-offs as JSON, and why
-- the plan chose its mode: reason).
CREATE TABLE IF NOT EXISTS analytics.build_state (
    build_id BIGINT,
    built_at TIMESTAMPTZ,
    mode VARCHAR,
    max_ingest_id BIGINT,
    fingerprint VARCHAR,
    as_of_json VARCHAR,
    reason VARCHAR
)
