-- dcgm_samples_without_host: per cluster, the stored DCGM samples that have no host label
-- (node, kubernetes_node, Hostname, hostname: raw.dcgm_samples.host NULL) and so join no node,
-- with the distinct "metric on GPU" they are of (the first $named by name, and how many).
-- A row group without NULL hosts is skipped by its statistics, so the cost does not grow with
-- the samples that have a host.
SELECT
    cluster,
    count(*) AS samples,
    count(DISTINCT what) AS series,
    list_sort(list(DISTINCT what))[1:$named] AS named
FROM (
    SELECT cluster,
        metric || ' on ' || coalesce(gpu_uuid, 'gpu ' || CAST(gpu_index AS VARCHAR), device, '?') AS what
    FROM raw.dcgm_samples
    WHERE host IS NULL
)
GROUP BY cluster
ORDER BY cluster
