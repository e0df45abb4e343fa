-- The scheduler-tuning recommendations, most severe first, then by expected GPU-hour gain.
SELECT id, severity, rule, cluster, scope, change_text, expected_gain_gpu_h_per_week,
       expected_wait_reduction_s, confidence, evidence, patch_kind, patch_content,
       window_start, window_end, as_of
FROM recommendations
ORDER BY CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'info' THEN 2 ELSE 3 END,
         expected_gain_gpu_h_per_week DESC NULLS LAST, id;
