-- Each node's GPUs (core.nodes), for the whole-node attribution rule.
SELECT cluster, host, gpus FROM core.nodes
