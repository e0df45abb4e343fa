-- The cluster-days loaded from the lake's Delta tables (pipelines/warehouse/lake_load.py): the
-- sha256 of their data files over every raw table at the last load, and the block of warehouse
-- ingest ids their files were given (ingest_lo..ingest_hi, inclusive).
CREATE TABLE IF NOT EXISTS raw.lake_partitions (
    cluster        VARCHAR NOT NULL,
    partition_date DATE NOT NULL,
    files_sha256   VARCHAR NOT NULL,
    ingest_lo      BIGINT NOT NULL,
    ingest_hi      BIGINT NOT NULL,
    PRIMARY KEY (cluster, partition_date)
);
