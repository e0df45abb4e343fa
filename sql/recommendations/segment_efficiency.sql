-- segment_efficiency: per cluster and segment size at the gang level, the mean segment-capacity efficiency over the hours since $start, the largest block (nodes) and the healthy GPU-hours.
WITH gang AS (SELECT cluster, hour, level FROM stranded_gpu_hourly WHERE level IS NOT NULL),
seg AS (
    SELECT s.cluster, s.segment_size, avg(s.efficiency) AS efficiency
    FROM segment_capacity_hourly AS s JOIN gang USING (cluster, hour, level)
    WHERE s.hour >= $start
    GROUP BY s.cluster, s.segment_size
), dom AS (
    SELECT d.cluster, max(d.nodes) AS domain_size, sum(d.healthy_gpus) AS healthy_gpu_h
    FROM domain_capacity_hourly AS d JOIN gang USING (cluster, hour, level)
    WHERE d.hour >= $start
    GROUP BY d.cluster
)
SELECT seg.cluster, seg.segment_size, seg.efficiency, dom.domain_size, dom.healthy_gpu_h
FROM seg JOIN dom USING (cluster)
ORDER BY seg.cluster, seg.segment_size;
