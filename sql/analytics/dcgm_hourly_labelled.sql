-- Whether raw.dcgm_hourly holds a labelled row with samples for cluster $cluster (the rows
-- analytics/dcgm_hourly_activity.sql reads).
SELECT count(*) > 0 AS found
FROM (
    SELECT 1 FROM raw.dcgm_hourly
    WHERE hpc_job IS NOT NULL AND samples > 0 AND cluster = $cluster
    LIMIT 1
)
