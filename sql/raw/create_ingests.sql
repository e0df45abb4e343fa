-- One row per file load: what was read, when, and how many rows landed or were rejected.
CREATE TABLE IF NOT EXISTS raw.ingests (
    ingest_id    BIGINT PRIMARY KEY,
    source       VARCHAR NOT NULL,   -- sacct | k8s-events | k8s-pods | dcgm
    cluster      VARCHAR,
    file         VARCHAR NOT NULL,   -- absolute path (or source URL) of the input
    sha256       VARCHAR,
    loaded_at    TIMESTAMPTZ NOT NULL,
    rows_loaded  BIGINT NOT NULL,
    rows_rejected BIGINT NOT NULL,
    info         VARCHAR            -- JSON: format, delimiter, fields, DST counts
);
