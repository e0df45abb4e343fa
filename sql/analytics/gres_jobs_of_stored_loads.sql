-- The jobs the per-job GPU index map loads $ids named, as the last build kept them
-- (analytics.build_gres_jobs): the loads deleted since, whose raw rows are gone
-- (pipelines.analytics.incremental._gres_days).
SELECT ingest_id, cluster, job_id
FROM analytics.build_gres_jobs
WHERE list_contains($ids, ingest_id)
