-- analytics.build_pod_days without rows, where the warehouse holds no raw.dcgm_samples
-- (sql/analytics/create_pod_days.sql).
CREATE OR REPLACE TABLE analytics.build_pod_days (
    ingest_id BIGINT,
    cluster VARCHAR,
    namespace VARCHAR,
    pod VARCHAR,
    lo TIMESTAMPTZ,
    hi TIMESTAMPTZ
)
