-- The ingests loaded after watermark $mark, in load order.
SELECT ingest_id, source, cluster, file FROM raw.ingests WHERE ingest_id > $mark ORDER BY ingest_id
