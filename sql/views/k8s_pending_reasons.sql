-- k8s_pending_reasons: "why pending" counts per workload attempt (FailedScheduling reasons etc.).
CREATE OR REPLACE VIEW k8s_pending_reasons AS
SELECT cluster, namespace, job_id, attempt, component, reason, events, objects, max_nodes,
       first_seen, last_seen, example, as_of
FROM core.k8s_pending_reasons LEFT JOIN core.build_cutoffs USING (cluster);
