-- The (cluster, job key) sort keys (analytics/create_slurm_rows_keyed.sql) whose resolution may
-- differ from the stored core.slurm_jobs: the identities with a raw row of an ingest the last
-- build did not resolve as it is now, and those with a stored row of such an ingest. An ingest
-- is unchanged when analytics.build_slurm_ingests holds it with the same raw row count, file
-- hash and load time (analytics/slurm_ingest_rows.sql); a file loaded again deletes its earlier
-- load, whose id the new load may take, and a replaced lake partition changes its rows. A
-- deleted raw row that the resolution had dropped (superseded by another export's row) changes
-- nothing, so the stored rows name every identity a deletion can change.
WITH now AS (
    SELECT r.ingest_id, count(*) AS n, any_value(i.sha256) AS sha256,
        any_value(i.loaded_at) AS loaded_at
    FROM raw.slurm_rows AS r
    LEFT JOIN raw.ingests AS i USING (ingest_id)
    GROUP BY r.ingest_id
), unchanged AS (
    SELECT now.ingest_id
    FROM now
    JOIN analytics.build_slurm_ingests AS b USING (ingest_id)
    WHERE now.n = b.n
        AND now.sha256 IS NOT DISTINCT FROM b.sha256
        AND now.loaded_at IS NOT DISTINCT FROM b.loaded_at
)
SELECT DISTINCT _part_key AS k
FROM slurm_rows_keyed
WHERE ingest_id NOT IN (SELECT ingest_id FROM unchanged)
UNION
SELECT DISTINCT coalesce(cluster, '') || chr(0) || coalesce(job_key, '') AS k
FROM core.slurm_jobs
WHERE ingest_id NOT IN (SELECT ingest_id FROM unchanged)
ORDER BY k
