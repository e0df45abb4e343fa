-- topology: node → domain per topology level, with the interval each map was in force (topology.conf, Node labels, else inventory racks).
CREATE OR REPLACE VIEW topology AS
SELECT cluster, level, domain, node, valid_from, valid_to, source
FROM core.topology;
