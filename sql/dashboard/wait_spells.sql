-- Waiting spells (one per attempt or never-started job) eligible in the filter window. A spell that
-- never became eligible (counted as excluded) has no eligible time: it is the window's when it ended
-- there (cancelled while held); one still held at the cut-off is every window's.
SELECT source, cluster, team, partition, bucket, size_gpus, week, eligible_at,
       wait_s AS duration_s, started
FROM time_to_start_jobs
WHERE ($cluster IS NULL OR cluster = $cluster) AND ($team IS NULL OR team = $team)
  AND CASE WHEN eligible_at IS NOT NULL THEN eligible_at >= $start AND eligible_at < $end
           ELSE end_at IS NULL OR (end_at >= $start AND end_at < $end)
      END;
