-- The hours of domain_capacity_hourly in the filter window (the Topology page's time slider), oldest first.
SELECT DISTINCT hour
FROM domain_capacity_hourly
WHERE ($cluster IS NULL OR cluster = $cluster) AND hour >= $start AND hour < $end
ORDER BY hour;
