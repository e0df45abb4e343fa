-- analytics.build_pod_days without rows (pipelines.analytics.incremental.POD_DAYS_TABLE), before
-- a full build fills it from every load (sql/analytics/insert_pod_days.sql).
CREATE OR REPLACE TABLE analytics.build_pod_days (
    ingest_id BIGINT,
    cluster VARCHAR,
    namespace VARCHAR,
    pod VARCHAR,
    lo TIMESTAMPTZ,
    hi TIMESTAMPTZ
)
