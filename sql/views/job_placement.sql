-- job_placement: per started attempt and topology level, the domains its nodes used against the fewest possible (METRICS.md "Topology and gang placement").
CREATE OR REPLACE VIEW job_placement AS
SELECT cluster, job_id, attempt, level, start_at, nodes, domain_size, domains_used, domains_min,
       spread, topology_request, as_of
FROM analytics.job_placement LEFT JOIN core.build_cutoffs USING (cluster);
