-- Per cluster, hour and segment size at the gang level: free and healthy slots of s trays in one domain and the segment-capacity efficiency, in the filter window.
WITH gang AS (SELECT cluster, hour, level FROM stranded_gpu_hourly WHERE level IS NOT NULL)
SELECT s.cluster, s.hour, s.segment_size, s.free_slots, s.healthy_slots, s.configured_slots,
       s.efficiency
FROM segment_capacity_hourly AS s JOIN gang USING (cluster, hour, level)
WHERE ($cluster IS NULL OR s.cluster = $cluster) AND s.hour >= $start AND s.hour < $end
ORDER BY s.cluster, s.hour, s.segment_size;
