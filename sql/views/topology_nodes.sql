-- topology_nodes: the dated node → domain map per topology level (topology.conf, Node labels, else the inventory's racks as one level `rack`).
CREATE OR REPLACE VIEW topology_nodes AS
SELECT cluster, level, domain, node, valid_from, valid_to
FROM core.topology;
