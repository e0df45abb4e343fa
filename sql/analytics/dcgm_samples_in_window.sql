-- Whether raw.dcgm_samples holds a sample of one of the clusters $clusters with $lo <= ts < $hi:
-- 5-minute telemetry that could attribute activity in an incremental build's window.
SELECT count(*) > 0 AS found
FROM (
    SELECT 1 FROM raw.dcgm_samples
    WHERE list_contains($clusters::VARCHAR[], cluster) AND ts >= $lo AND ts < $hi
    LIMIT 1
)
