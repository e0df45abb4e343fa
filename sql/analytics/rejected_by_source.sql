-- Rejected raw rows per cluster, source and reason (the data-quality findings' rejects).
SELECT i.cluster, r.source, r.reason, count(*) AS n
FROM raw.rejected_rows r
JOIN raw.ingests i USING (ingest_id)
GROUP BY ALL
