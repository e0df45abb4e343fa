-- Registry drift per cluster and team: the scheduler's configured share vs the registry's (fractions).
SELECT cluster, scheduler, team, objects, cohort, resource, configured_value, registry_share,
       configured_share, drift, relative_drift, tolerance, drifted, snapshot_at, as_of
FROM registry_drift
WHERE ($cluster IS NULL OR cluster = $cluster)
  AND ($team IS NULL OR list_contains(string_split(team, ', '), $team))
ORDER BY drifted DESC, abs(relative_drift) DESC NULLS LAST, cluster, scheduler, team;
