-- Slurm GPU allocations running at each cluster's data cut-off (started, not ended by it), with their partition and time limit: the state the Queue page's start estimates replay from.
WITH cut AS (
    SELECT cluster, max(as_of) AS as_of FROM jobs GROUP BY cluster
)
SELECT s.cluster, s.job_id, s.partition, coalesce(nullif(s.gpus, 0), s.req_gpus) AS gpus,
       s.start_at, s.timelimit_s, c.as_of
FROM slurm_jobs AS s
JOIN cut AS c USING (cluster)
WHERE s.step IS NULL AND s.start_at IS NOT NULL AND s.start_at <= c.as_of
  AND (s.end_at IS NULL OR s.end_at > c.as_of)
  AND coalesce(nullif(s.gpus, 0), s.req_gpus) > 0
  AND ($cluster IS NULL OR s.cluster = $cluster)
ORDER BY s.cluster, s.start_at, s.job_id;
