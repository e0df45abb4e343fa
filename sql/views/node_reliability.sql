-- node_reliability: failure signals per node with the lemon-node score and rank.
CREATE OR REPLACE VIEW node_reliability AS
SELECT cluster, host, rack, attempts, node_fail_attempts, infra_failed_attempts,
       expected_infra_failures, xid_events, xid_codes, down_s, planned_down_s, down_episodes,
       lost_gpu_s, infra_lost_gpu_s, infra_share, lemon_score, lemon_rank, as_of
FROM analytics.node_reliability LEFT JOIN core.build_cutoffs USING (cluster);
