-- topology_fragmentation_hourly: per cluster, hour, topology level and gang size, whole-domain slots of the free nodes against the same nodes unfragmented (METRICS.md "Topology and gang placement").
CREATE OR REPLACE VIEW topology_fragmentation_hourly AS
SELECT cluster, hour, level, gang_nodes, free_nodes, domain_slots, unfragmented_slots,
       stranded_slots, as_of
FROM analytics.topology_fragmentation_hourly LEFT JOIN core.build_cutoffs USING (cluster);
