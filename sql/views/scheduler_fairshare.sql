-- scheduler_fairshare: the schedulers' own view — latest sshare per account, Kueue usage per ClusterQueue.
CREATE OR REPLACE VIEW scheduler_fairshare AS
SELECT cluster, scheduler, object, team, cohort, raw_shares, norm_shares, raw_usage,
       effective_usage, level_fs, fair_share, users, nominal_gpus, usage_gpus, borrowed_gpus,
       usage_of_nominal, snapshot_at,
       coalesce(as_of, (SELECT max(as_of) FROM core.build_cutoffs
                         WHERE cluster IN (SELECT cluster FROM analytics.occupancy_hourly)))
           AS as_of
FROM analytics.scheduler_fairshare LEFT JOIN core.build_cutoffs USING (cluster);
