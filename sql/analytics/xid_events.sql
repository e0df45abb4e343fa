-- XID events of every GPU, one row each. An XID is an event of the device: dcgm-exporter writes
-- its fields on the series of every MIG GPU instance of the GPU (NVIDIA/dcgm-exporter#317, #713),
-- so a GPU's instances are one series here, their highest value at each scrape:
--   * each change of DCGM_FI_DEV_XID_ERRORS to a non-zero value (it holds the last XID, not a
--     count);
--   * where a GPU has no DCGM_FI_DEV_XID_ERRORS value at that scrape, each rise of
--     DCGM_EXP_XID_ERRORS_COUNT: the number of XIDs within the exporter's window (its
--     window_size_in_ms label, 5 minutes by default), one series per XID code (its xid label,
--     the column xid). Each code's series is read per GPU (the highest instance's value at a
--     scrape) against the GPU's scrape before, where a code absent is 0; a rise of k is k events
--     at this scrape with that code, one XID staying in the window over ten scrapes one event.
--     A scrape more than 5 minutes after the one before rises from 0 (what was in the window
--     has left it).
-- prev_ts: the GPU's scrape before the event's on its series (the last valued
-- DCGM_FI_DEV_XID_ERRORS scrape, or the count's scrape before), NULL for a series' first: the
-- XID was raised after it was collected (metrics.waterfall, the FAILED → infra rule).
-- The GPU and its owning pod (dcgm-exporter's pod mapping; of a MIG GPU, one of its instances')
-- come along, so a slurmd pod's XID can be moved to the Slurm node it ran as
-- (rehome_slurmd_dcgm), and an event whose host is the exporter's own pod name
-- (host_is_exporter_pod) to its pod's node.
WITH per_instance AS (
    SELECT cluster, host, gpu_uuid, mig_instance, ts,
        max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_XID_ERRORS') AS last_xid,
        sum(value) FILTER (WHERE metric = 'DCGM_EXP_XID_ERRORS_COUNT') AS n,
        max(namespace) AS namespace, max(pod) AS pod,
        bool_or(host_is_exporter_pod) AS host_is_exporter_pod
    FROM raw.dcgm_samples
    WHERE metric IN ('DCGM_FI_DEV_XID_ERRORS', 'DCGM_EXP_XID_ERRORS_COUNT')
    GROUP BY cluster, host, gpu_uuid, mig_instance, ts
),
scrapes AS (
    SELECT cluster, host, gpu_uuid, ts,
        max(last_xid) AS last_xid, max(n) AS n,
        min(namespace) AS namespace, min(pod) AS pod,
        bool_or(host_is_exporter_pod) AS host_is_exporter_pod
    FROM per_instance
    GROUP BY cluster, host, gpu_uuid, ts
),
last_xid AS (
    SELECT *, lag(last_xid) OVER (PARTITION BY cluster, host, gpu_uuid ORDER BY ts) AS prev,
        lag(ts) OVER (PARTITION BY cluster, host, gpu_uuid ORDER BY ts) AS prev_ts
    FROM scrapes
    WHERE last_xid IS NOT NULL
),
counts AS (
    SELECT *, lag(ts) OVER (PARTITION BY cluster, host, gpu_uuid ORDER BY ts) AS prev_ts
    FROM scrapes
    WHERE n IS NOT NULL
),
code_counts AS (
    SELECT cluster, host, gpu_uuid, ts, code, max(n) AS n
    FROM (
        SELECT cluster, host, gpu_uuid, mig_instance, ts, xid AS code, sum(value) AS n
        FROM raw.dcgm_samples
        WHERE metric = 'DCGM_EXP_XID_ERRORS_COUNT'
        GROUP BY cluster, host, gpu_uuid, mig_instance, ts, xid
    )
    GROUP BY cluster, host, gpu_uuid, ts, code
),
rises AS (
    SELECT c.cluster, c.host, c.ts, c.prev_ts, c.gpu_uuid, c.namespace, c.pod,
        c.host_is_exporter_pod, c.last_xid, k.code,
        k.n - CASE WHEN c.prev_ts >= c.ts - INTERVAL 5 MINUTE THEN coalesce(p.n, 0) ELSE 0 END
            AS rise
    FROM counts AS c
    JOIN code_counts AS k
        ON k.cluster = c.cluster AND k.host = c.host AND k.gpu_uuid = c.gpu_uuid AND k.ts = c.ts
    LEFT JOIN code_counts AS p
        ON p.cluster = c.cluster AND p.host = c.host AND p.gpu_uuid = c.gpu_uuid
        AND p.ts = c.prev_ts AND p.code IS NOT DISTINCT FROM k.code
)
SELECT cluster, host, ts, last_xid::BIGINT AS xid, gpu_uuid, namespace, pod,
    coalesce(host_is_exporter_pod, false) AS host_is_exporter_pod, prev_ts
FROM last_xid
WHERE last_xid > 0 AND (prev IS NULL OR prev <> last_xid)
UNION ALL
SELECT cluster, host, ts, code::BIGINT, gpu_uuid, namespace, pod,
    coalesce(host_is_exporter_pod, false), prev_ts
FROM rises, range(CAST(rise AS BIGINT)) AS _k(k)
WHERE last_xid IS NULL AND rise >= 1
