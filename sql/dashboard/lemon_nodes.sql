-- Lemon nodes: the $top worst nodes per cluster by lemon_rank, with their failure signals.
SELECT cluster, lemon_rank, host, rack, lemon_score,
       infra_failed_attempts, expected_infra_failures, node_fail_attempts, attempts,
       xid_events, array_to_string(xid_codes, ',') AS xid_codes,
       down_s / 3600.0 AS down_h, planned_down_s / 3600.0 AS planned_down_h,
       infra_lost_gpu_s / 3600.0 AS infra_lost_gpu_h, infra_share
FROM node_reliability
WHERE ($cluster IS NULL OR cluster = $cluster) AND lemon_rank <= $top
ORDER BY cluster, lemon_rank;
