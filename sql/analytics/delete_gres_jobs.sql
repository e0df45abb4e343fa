-- Forget the jobs of the per-job GPU index map loads $ids (deleted since the last build) in
-- analytics.build_gres_jobs (pipelines.analytics.incremental.record_build).
DELETE FROM analytics.build_gres_jobs WHERE list_contains($ids, ingest_id)
