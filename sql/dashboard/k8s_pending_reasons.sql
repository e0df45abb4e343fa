-- Why Kubernetes workloads pended: events and workload attempts per component and reason, for attempts eligible in the filter window.
SELECT r.cluster, r.component, r.reason, sum(r.events)::BIGINT AS events,
       count(DISTINCT (r.cluster, r.job_id, r.attempt)) AS workloads
FROM k8s_pending_reasons AS r
JOIN k8s_workloads AS w USING (cluster, namespace, job_id, attempt)
WHERE w.eligible_at >= $start AND w.eligible_at < $end
  AND ($cluster IS NULL OR r.cluster = $cluster) AND ($team IS NULL OR w.team = $team)
GROUP BY ALL
ORDER BY events DESC, r.cluster, r.component, r.reason;
