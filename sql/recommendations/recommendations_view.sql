-- recommendations: one row per scheduler-tuning recommendation of the last run, plus earlier proposals no longer made that were applied (stable id = hash of rule and scope), with its status.
CREATE OR REPLACE VIEW recommendations AS
SELECT id, rule, cluster, scope, severity, window_start, window_end, evidence,
       expected_gain_gpu_h_per_week, expected_wait_reduction_s, confidence, change_text,
       patch_kind, patch_content, proposed_at, "is_current", status, change_id, as_of
FROM analytics.recommendations
