-- kueue_topology_levels: the levels (spec.levels[].nodeLabel, highest first) of each cluster's Kueue Topology objects in their latest snapshot (the topology_level rule's configuration in force on Kubernetes).
SELECT cluster, name, level_index, node_label
FROM raw.kueue_topologies
QUALIFY snapshot_at = max(snapshot_at) OVER (PARTITION BY cluster)
ORDER BY cluster, name, level_index;
