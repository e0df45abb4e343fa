-- Kueue Workloads asking accelerator resources that count no GPU: one row per cluster and Workload uid, the resources of all its snapshots (sorted, comma-separated).
SELECT cluster, uid, string_agg(DISTINCT resource, ',' ORDER BY resource) AS uncounted_resources
FROM (
    SELECT cluster, uid, unnest(string_split(uncounted_resources, ',')) AS resource
    FROM raw.k8s_workloads
    WHERE uncounted_resources IS NOT NULL
)
GROUP BY cluster, uid
ORDER BY cluster, uid;
