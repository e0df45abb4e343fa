-- dcgm_hosts: each cluster's distinct DCGM sample hosts, the exporter's own pod names (placed by
-- the pods' lives, not by name) left out, with their first and last sample time: from the
-- loads' hosts (analytics.build_dcgm_hosts, kept per load), not from the samples.
SELECT cluster, host, min(first_seen) AS first_seen, max(last_seen) AS last_seen
FROM analytics.build_dcgm_hosts
GROUP BY cluster, host
ORDER BY cluster, host
