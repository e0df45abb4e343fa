-- The wait keys (cluster, job_id, submit_at, eligible_at) of the frame _wait_keys (a local of the
-- caller, scanned by name) that a stored attempt of core.jobs has, NULLs equal
-- (pipelines.analytics.incremental._stable_waits: is a changed job's wait the same in both builds?).
SELECT DISTINCT k.cluster, k.job_id, k.submit_at, k.eligible_at
FROM _wait_keys AS k
SEMI JOIN core.jobs AS j
    ON j.cluster IS NOT DISTINCT FROM k.cluster
    AND j.job_id IS NOT DISTINCT FROM k.job_id
    AND j.submit_at IS NOT DISTINCT FROM k.submit_at
    AND j.eligible_at IS NOT DISTINCT FROM k.eligible_at
