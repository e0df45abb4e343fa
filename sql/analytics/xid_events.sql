-- XID events: each change of DCGM_FI_DEV_XID_ERRORS to a non-zero value (it holds the last XID,
-- not a count), plus the non-zero DCGM_EXP_XID_ERRORS_COUNT samples (xid NULL).
SELECT cluster, host, ts, value::BIGINT AS xid
FROM (
    SELECT cluster, host, gpu_uuid, ts, value,
        lag(value) OVER (PARTITION BY cluster, host, gpu_uuid ORDER BY ts) AS prev
    FROM raw.dcgm_samples
    WHERE metric = 'DCGM_FI_DEV_XID_ERRORS'
)
WHERE value > 0 AND (prev IS NULL OR prev <> value)
UNION ALL
SELECT cluster, host, ts, NULL::BIGINT
FROM raw.dcgm_samples
WHERE metric = 'DCGM_EXP_XID_ERRORS_COUNT' AND value > 0
