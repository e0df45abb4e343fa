-- fairness_weekly: per week (or rolling 28 days ending then), cluster (NULL = fleet) and team.
CREATE OR REPLACE VIEW fairness_weekly AS
SELECT window_start AS week, "window", cluster, team, share, demand_gpu_s, fair_gpu_s,
       usage_gpu_s AS used_gpu_s, entitlement_ratio, debt_gpu_h AS fair_share_debt_gpu_h,
       coalesce(as_of, (SELECT min(as_of) FROM core.build_cutoffs
                         WHERE cluster IN (SELECT cluster FROM analytics.occupancy_hourly)))
           AS as_of
FROM analytics.fairness_weekly LEFT JOIN core.build_cutoffs USING (cluster);
