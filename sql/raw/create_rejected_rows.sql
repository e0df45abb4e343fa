-- Input rows that could not be parsed, with their raw text and the reason (never dropped silently).
CREATE TABLE IF NOT EXISTS raw.rejected_rows (
    source    VARCHAR NOT NULL,
    file      VARCHAR NOT NULL,
    line_no   BIGINT,
    line_end  BIGINT,
    field     VARCHAR,
    raw       VARCHAR,
    reason    VARCHAR NOT NULL,
    ingest_id BIGINT NOT NULL
);
