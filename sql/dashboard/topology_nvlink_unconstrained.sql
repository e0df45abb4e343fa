-- Multi-node gangs on NVLink clique nodes (level nvlink) started in the filter window whose Kueue Workload named no topology level (job_placement.topology_request NULL), most nodes first.
SELECT cluster, job_id, start_at, nodes, domain_size, domains_used
FROM job_placement
WHERE level = 'nvlink' AND nodes > 1 AND topology_request IS NULL
  AND ($cluster IS NULL OR cluster = $cluster)
  AND start_at >= $start AND start_at < $end
ORDER BY nodes DESC, start_at, cluster, job_id;
