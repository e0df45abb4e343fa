-- The samples before $before of the last-XID series (DCGM_FI_DEV_XID_ERRORS per cluster, host,
-- GPU and MIG instance) of clusters $cs and GPUs $gpus that the XID change rules compare a
-- later sample with (sql/analytics/xid_events.sql: the last valued scrape of the GPU;
-- dcgm_gpu_buckets.sql: the series' last sample, valued or blank): per series its last sample
-- and its last valued sample, however old. dcgm-exporter's last-XID value does not reset
-- (NVIDIA/dcgm-exporter#500), so a GPU scraped again after days still holds the XID it held:
-- no new event.
SELECT *
FROM raw.dcgm_samples
WHERE list_contains($cs, cluster) AND list_contains($gpus, gpu_uuid)
  AND metric = 'DCGM_FI_DEV_XID_ERRORS' AND ts < $before
QUALIFY row_number() OVER (PARTITION BY cluster, host, gpu_uuid, mig_instance ORDER BY ts DESC) = 1
     OR (value IS NOT NULL AND row_number() OVER (
             PARTITION BY cluster, host, gpu_uuid, mig_instance, value IS NULL ORDER BY ts DESC) = 1)
