-- analytics.build_dcgm_hosts without rows (pipelines.analytics.incremental.DCGM_HOSTS_TABLE), before
-- a full build fills it from every load (sql/analytics/insert_dcgm_hosts.sql).
CREATE OR REPLACE TABLE analytics.build_dcgm_hosts (
    ingest_id BIGINT,
    cluster VARCHAR,
    host VARCHAR,
    first_seen TIMESTAMPTZ,
    last_seen TIMESTAMPTZ
)
