-- The scheduler-tuning recommendations, most severe first, then by expected GPU-hour gain.
-- Every column (`SELECT *`): a copy published before `status` and `change_id` existed lacks them.
SELECT *
FROM recommendations
ORDER BY CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'info' THEN 2 ELSE 3 END,
         expected_gain_gpu_h_per_week DESC NULLS LAST, id;
