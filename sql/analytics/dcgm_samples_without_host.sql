-- dcgm_samples_without_host: per cluster, the stored DCGM samples that have no host label
-- (node, kubernetes_node, Hostname, hostname: raw.dcgm_samples.host NULL) and so join no node,
-- with the distinct "metric on GPU" they are of (the first $named by name, and how many) and how
-- many have no job label either (pod, hpc_job), so that no job sees them.
-- A row group without NULL hosts is skipped by its statistics, so the cost does not grow with
-- the samples that have a host.
SELECT
    cluster,
    count(*) AS samples,
    count(*) FILTER (WHERE no_job_label) AS without_job_label,
    count(DISTINCT what) AS series,
    list_sort(list(DISTINCT what))[1:$named] AS named
FROM (
    SELECT cluster,
        metric || ' on ' || coalesce(gpu_uuid, 'gpu ' || CAST(gpu_index AS VARCHAR), device, '?') AS what,
        pod IS NULL AND hpc_job IS NULL AS no_job_label
    FROM raw.dcgm_samples
    WHERE host IS NULL
)
GROUP BY cluster
ORDER BY cluster
