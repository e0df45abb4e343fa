-- nodes: GPU nodes per cluster, from the inventory file or, failing that, the nodes seen in the data.
CREATE OR REPLACE VIEW nodes AS
SELECT cluster, host, gpus, gpu_type, partition, rack, capacity_source
FROM core.nodes;
