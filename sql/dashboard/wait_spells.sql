-- Waiting spells (one per attempt or never-started job) eligible in the filter window; never-eligible ones are kept (counted as excluded).
SELECT source, cluster, team, partition, bucket, size_gpus, week, eligible_at,
       wait_s AS duration_s, started
FROM time_to_start_jobs
WHERE ($cluster IS NULL OR cluster = $cluster) AND ($team IS NULL OR team = $team)
  AND (eligible_at IS NULL OR (eligible_at >= $start AND eligible_at < $end));
