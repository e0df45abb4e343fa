-- The (cluster, job key) sort keys (analytics/create_slurm_rows_keyed.sql) whose resolution may
-- differ from the stored core.slurm_jobs: the identities with a raw row of an ingest not in
-- $unchanged (the ingests the last build resolved as they are now:
-- pipelines.analytics.incremental.unchanged_slurm_ingests), and those with a stored row of such
-- an ingest (a load deleted or replaced since). A deleted raw row that the resolution had
-- dropped (superseded by another export's row) changes nothing, so the stored rows name every
-- identity a deletion can change.
SELECT DISTINCT _part_key AS k
FROM slurm_rows_keyed
WHERE NOT list_contains($unchanged, ingest_id)
UNION
SELECT DISTINCT coalesce(cluster, '') || chr(0) || coalesce(job_key, '') AS k
FROM core.slurm_jobs
WHERE NOT list_contains($unchanged, ingest_id)
ORDER BY k
