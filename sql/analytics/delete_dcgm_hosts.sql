-- Forget the hosts of the raw.dcgm_samples loads $ids (deleted or loaded again since the last
-- build) in analytics.build_dcgm_hosts (pipelines.analytics.incremental.record_dcgm_hosts).
DELETE FROM analytics.build_dcgm_hosts WHERE list_contains($ids, ingest_id)
