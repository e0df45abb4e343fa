-- Forget the pod days of the raw.dcgm_samples loads $ids (deleted since the last build) in
-- analytics.build_pod_days (pipelines.analytics.incremental.record_build).
DELETE FROM analytics.build_pod_days WHERE list_contains($ids, ingest_id)
