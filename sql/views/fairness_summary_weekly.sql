-- fairness_summary_weekly: Jain's index and unmet entitlement per week / rolling window.
CREATE OR REPLACE VIEW fairness_summary_weekly AS
SELECT window_start AS week, "window", cluster, teams, fairness_index AS jain_index,
       unmet_entitlement,
       coalesce(as_of, (SELECT min(as_of) FROM core.build_cutoffs
                         WHERE cluster IN (SELECT cluster FROM analytics.occupancy_hourly)))
           AS as_of
FROM analytics.fairness_summary_weekly LEFT JOIN core.build_cutoffs USING (cluster);
