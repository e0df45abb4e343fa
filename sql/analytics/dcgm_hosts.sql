-- dcgm_hosts: each cluster's distinct DCGM sample hosts, the exporter's own pod names (placed by
-- the pods' lives, not by name) left out.
SELECT DISTINCT cluster, host
FROM raw.dcgm_samples
WHERE host IS NOT NULL AND NOT coalesce(host_is_exporter_pod, false)
