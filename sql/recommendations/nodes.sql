-- The nodes the rules place reservations and partitions on: cluster, host, partition, GPUs.
SELECT cluster, host, partition, gpus FROM nodes
