-- The Delta table versions the last load from the lake read, one row per raw table.
CREATE TABLE IF NOT EXISTS raw.lake_versions (
    table_name VARCHAR PRIMARY KEY,
    version    BIGINT NOT NULL
);
