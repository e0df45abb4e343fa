-- The ingest watermark of the last build, when its resolved Slurm rows (core.slurm_jobs) were
-- resolved by code and a registry whose hash is $key: the identities with no raw row loaded
-- after it may keep their stored resolution. No row otherwise.
SELECT s.max_ingest_id
FROM analytics.build_state AS s
JOIN analytics.build_resolution AS r USING (build_id)
WHERE r.resolution_key = $key
ORDER BY s.build_id DESC
LIMIT 1
