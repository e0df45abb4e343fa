-- Job attempts for the Jobs page (running in the window), with job_gpu_summary's telemetry, filtered by cluster, team and $text.
-- $text matches (case-insensitive substring) job id, raw id, user, team, account, partition or state.
SELECT j.cluster, j.job_id, j.attempt, j.user_name, j.team, j.account, j.partition, j.state,
       j.gpus, coalesce(j.run_s, epoch(j.as_of - j.start_at)) AS elapsed_s,
       coalesce(j.gpu_s,  -- running: its pieces of held GPUs (job_holds) to as_of
                (SELECT sum(h.gpus * greatest(0, epoch(least(coalesce(h.end_at, j.as_of), j.as_of)
                                                       - h.start_at)))
                 FROM job_holds h
                 WHERE h.cluster = j.cluster AND h.job_id = j.job_id AND h.attempt = j.attempt))
           AS gpu_s,
       s.mean_activity, s.observed_gpu_s, s.idle_gpu_s, j.start_at, j.end_at, j.source
FROM jobs AS j
LEFT JOIN job_gpu_summary AS s USING (cluster, job_id, attempt)
WHERE j.start_at < $end AND coalesce(j.end_at, j.as_of) >= $start
  AND ($cluster IS NULL OR j.cluster = $cluster)
  AND ($team IS NULL OR j.team = $team)
  AND (CAST($text AS VARCHAR) = ''
       OR contains(lower(concat_ws(' ', j.job_id, j.job_id_raw, j.user_name, j.team, j.account,
                                   j.partition, j.state)),
                   lower(CAST($text AS VARCHAR))))
ORDER BY j.start_at DESC, j.cluster, j.job_id, j.attempt
LIMIT $limit;
