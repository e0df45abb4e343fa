-- Per cluster with a topology map, over [$start, $end): stranded GPU-hours and share of idle, held for gangs, degraded racks, large-job wait causes (hours) and the GPU-hour share of multi-node gangs placed in the fewest domains.
WITH gang AS (SELECT cluster, hour, level FROM stranded_gpu_hourly WHERE level IS NOT NULL),
s AS (
    SELECT cluster, sum(stranded_gpu_s) / 3600 AS stranded_gpu_h,
           sum(stranded_gpu_s) / nullif(sum(idle_gpu_s + held_gpu_s), 0) AS stranded_share,
           sum(held_for_gangs_gpu_s) / 3600 AS held_for_gangs_gpu_h
    FROM stranded_gpu_hourly
    WHERE level IS NOT NULL AND hour >= $start AND hour < $end
    GROUP BY cluster
), d AS (
    SELECT c.cluster, count(DISTINCT c.domain) FILTER (WHERE c.degraded_nodes > 0) AS degraded_racks
    FROM domain_capacity_hourly AS c JOIN gang USING (cluster, hour, level)
    WHERE c.hour >= $start AND c.hour < $end
    GROUP BY c.cluster
), w AS (
    SELECT cluster, count(*) AS large_jobs, sum(quota_s) / 3600 AS quota_h,
           sum(priority_s) / 3600 AS priority_h, sum(fragmentation_s) / 3600 AS fragmentation_h,
           sum(other_s) / 3600 AS other_h, sum(blocked_idle_gpu_s) / 3600 AS blocked_idle_gpu_h
    FROM large_job_wait_causes
    WHERE eligible_at >= $start AND eligible_at < $end
    GROUP BY cluster
), p AS (
    SELECT p.cluster,
           coalesce(sum(j.gpu_s) FILTER (WHERE p.spread <= 0), 0) / nullif(sum(j.gpu_s), 0)
               AS optimal_share
    FROM job_placement AS p
    JOIN jobs AS j USING (cluster, job_id, attempt)
    WHERE p.nodes > 1 AND p.start_at >= $start AND p.start_at < $end
      AND EXISTS (SELECT 1 FROM gang AS g WHERE g.cluster = p.cluster AND g.level = p.level
                                              AND g.hour = date_trunc('hour', p.start_at))
    GROUP BY p.cluster
)
SELECT s.cluster, s.stranded_gpu_h, s.stranded_share, s.held_for_gangs_gpu_h,
       coalesce(d.degraded_racks, 0) AS degraded_racks, coalesce(w.large_jobs, 0) AS large_jobs,
       w.quota_h, w.priority_h, w.fragmentation_h, w.other_h, w.blocked_idle_gpu_h, p.optimal_share
FROM s LEFT JOIN d USING (cluster) LEFT JOIN w USING (cluster) LEFT JOIN p USING (cluster)
ORDER BY s.cluster;
