-- holds_in_window: the stored pieces of held GPUs (job_holds, pieced) of the attempts that overlap [$start, ∞).
SELECT h.cluster, h.job_id, h.attempt, h.start_at, h.end_at, h.gpus
FROM job_holds h
JOIN jobs j ON j.cluster = h.cluster AND j.job_id = h.job_id AND j.attempt = h.attempt
WHERE h.pieced AND coalesce(j.end_at, j.as_of, j.start_at) >= $start
ORDER BY h.cluster, h.job_id, h.attempt, h.start_at
