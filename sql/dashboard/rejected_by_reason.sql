-- Rejected input rows per source and reason.
SELECT source, reason, count(*) AS rows
FROM rejected_rows
GROUP BY ALL
ORDER BY rows DESC
LIMIT 50;
