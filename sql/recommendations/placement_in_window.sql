-- placement_in_window: job_placement rows of attempts started since $start (the topology_level rule's evidence).
SELECT cluster, job_id, attempt, level, nodes, domain_size, domains_used, domains_min
FROM job_placement
WHERE start_at >= $start
ORDER BY cluster, job_id, attempt, level;
