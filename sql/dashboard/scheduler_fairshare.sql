-- The schedulers' own view: latest sshare per Slurm account, Kueue usage per ClusterQueue.
SELECT cluster, scheduler, object, team, cohort, raw_shares, norm_shares, effective_usage,
       level_fs, fair_share, users, nominal_gpus, usage_gpus, borrowed_gpus, usage_of_nominal,
       snapshot_at, as_of
FROM scheduler_fairshare
WHERE ($cluster IS NULL OR cluster = $cluster)
  AND ($team IS NULL OR list_contains(string_split(team, ', '), $team))
ORDER BY cluster, scheduler, object;
