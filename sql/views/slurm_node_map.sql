-- slurm_node_map: per Slurm-on-Kubernetes cluster, each interval during which a Slurm node name ran in one pod on one Kubernetes node (METRICS.md "Slurm on Kubernetes").
CREATE OR REPLACE VIEW slurm_node_map AS
SELECT cluster, slurm_node, valid_from, valid_to, namespace, pod, k8s_node, nodeset, gpus,
       source, as_of
FROM analytics.slurm_node_map LEFT JOIN core.build_cutoffs USING (cluster);
