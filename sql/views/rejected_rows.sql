-- rejected_rows: input rows that could not be parsed, with the raw text and the reason: the
-- loaded files' (raw.rejected_rows) and the node inventory's, which each build reads and
-- checks (core.inventory_rejected; source 'inventory', no ingest_id).
CREATE OR REPLACE VIEW rejected_rows AS
SELECT source, parse_filename(file) AS file, line_no, line_end, field, raw, reason, ingest_id
FROM raw.rejected_rows
UNION ALL
SELECT 'inventory', parse_filename(file), line_no, line_end, field, raw, reason,
       CAST(NULL AS BIGINT)
FROM core.inventory_rejected;
