-- rejected_rows: input rows that could not be parsed, with the raw text and the reason.
CREATE OR REPLACE VIEW rejected_rows AS
SELECT source, parse_filename(file) AS file, line_no, line_end, field, raw, reason, ingest_id
FROM raw.rejected_rows;
