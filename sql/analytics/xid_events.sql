-- XID events: each change of DCGM_FI_DEV_XID_ERRORS to a non-zero value (it holds the last XID,
-- not a count), plus the non-zero DCGM_EXP_XID_ERRORS_COUNT samples (xid NULL). The GPU and its
-- owning pod (dcgm-exporter's pod mapping) come along, so a slurmd pod's XID can be moved to the
-- Slurm node it ran as (rehome_slurmd_dcgm).
SELECT cluster, host, ts, value::BIGINT AS xid, gpu_uuid, namespace, pod
FROM (
    SELECT cluster, host, gpu_uuid, namespace, pod, ts, value,
        lag(value) OVER (PARTITION BY cluster, host, gpu_uuid ORDER BY ts) AS prev
    FROM raw.dcgm_samples
    WHERE metric = 'DCGM_FI_DEV_XID_ERRORS'
)
WHERE value > 0 AND (prev IS NULL OR prev <> value)
UNION ALL
SELECT cluster, host, ts, NULL::BIGINT, gpu_uuid, namespace, pod
FROM raw.dcgm_samples
WHERE metric = 'DCGM_EXP_XID_ERRORS_COUNT' AND value > 0
