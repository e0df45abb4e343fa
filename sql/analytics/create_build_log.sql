-- analytics.build_log: one row per table a rebuild wrote (mode, rows deleted and inserted, days).
CREATE TABLE IF NOT EXISTS analytics.build_log (
    build_id BIGINT,
    table_name VARCHAR,
    mode VARCHAR,
    rows_deleted BIGINT,
    rows_inserted BIGINT,
    days VARCHAR
)
