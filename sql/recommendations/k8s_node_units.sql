-- k8s_node_units: Node rows saying what one advertised nvidia.com/gpu is worth (labels, product).
SELECT cluster, name, snapshot_at, ingest_id, labels, gpu_product, gpu_resource, deleted_at
FROM raw.k8s_nodes
ORDER BY cluster, name, snapshot_at, ingest_id
