-- Per team, multi-node gangs started in the filter window at each cluster's gang level (that of the hour they started in): count, GPU-hours, the GPU-hour share placed in the fewest domains (spread <= 0), mean spread, and the same for large gangs (>= $min_gpus GPUs).
WITH gang AS (SELECT cluster, hour, level FROM stranded_gpu_hourly WHERE level IS NOT NULL)
SELECT j.team,
       count(*) AS gangs,
       sum(j.gpu_s) / 3600 AS gpu_h,
       coalesce(sum(j.gpu_s) FILTER (WHERE p.spread <= 0), 0) / nullif(sum(j.gpu_s), 0)
           AS optimal_share,
       avg(p.spread) AS mean_spread,
       count(*) FILTER (WHERE j.gpus >= $min_gpus) AS large_gangs,
       coalesce(sum(j.gpu_s) FILTER (WHERE j.gpus >= $min_gpus AND p.spread <= 0), 0)
           / nullif(sum(j.gpu_s) FILTER (WHERE j.gpus >= $min_gpus), 0) AS large_optimal_share
FROM job_placement AS p
JOIN jobs AS j USING (cluster, job_id, attempt)
WHERE p.nodes > 1 AND ($cluster IS NULL OR p.cluster = $cluster) AND ($team IS NULL OR j.team = $team)
  AND p.start_at >= $start AND p.start_at < $end
  AND EXISTS (SELECT 1 FROM gang AS g WHERE g.cluster = p.cluster AND g.level = p.level
                                          AND g.hour = date_trunc('hour', p.start_at))
GROUP BY j.team
ORDER BY optimal_share, j.team;
