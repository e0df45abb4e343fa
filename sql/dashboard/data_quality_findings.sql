-- Data-quality findings in the filter window (findings without a day always count).
SELECT cluster, day, partition, "check", value, detail
FROM data_quality
WHERE ($cluster IS NULL OR cluster = $cluster OR cluster IS NULL)
  AND (day IS NULL OR (day::TIMESTAMPTZ >= $start AND day::TIMESTAMPTZ < $end))
ORDER BY cluster, day, "check";
