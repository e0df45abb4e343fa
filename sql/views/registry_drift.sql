-- registry_drift: per cluster and team, the scheduler's configured share vs the registry's.
CREATE OR REPLACE VIEW registry_drift AS
SELECT cluster, scheduler, team, objects, cohort, resource, configured_value, configured_share,
       registry_share, drift, relative_drift, tolerance, drifted, snapshot_at,
       coalesce(as_of, (SELECT max(as_of) FROM core.build_cutoffs
                         WHERE cluster IN (SELECT cluster FROM analytics.occupancy_hourly)))
           AS as_of
FROM analytics.registry_drift LEFT JOIN core.build_cutoffs USING (cluster);
