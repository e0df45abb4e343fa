-- The cluster-days loaded from the lake: files' sha256 and ingest id block.
SELECT cluster, partition_date, files_sha256, ingest_lo, ingest_hi FROM raw.lake_partitions
