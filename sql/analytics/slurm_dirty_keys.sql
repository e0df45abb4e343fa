-- The (cluster, job key) sort keys (analytics/create_slurm_rows_keyed.sql) whose resolution may
-- differ from the stored core.slurm_jobs: identities with a raw row loaded after the last build
-- (ingest_id above $mark), and identities with a stored row of an ingest whose raw row count
-- changed since that build (analytics.build_slurm_ingests: a file loaded again or a lake
-- partition replaced deletes its old rows; any row deleted counts). A deleted raw row that the
-- resolution had dropped (superseded by another export's row) changes nothing, so the stored
-- rows name every identity a deletion can change.
WITH now AS (
    SELECT ingest_id, count(*) AS n FROM raw.slurm_rows GROUP BY ingest_id
), changed AS (
    SELECT b.ingest_id
    FROM analytics.build_slurm_ingests AS b
    LEFT JOIN now USING (ingest_id)
    WHERE now.n IS DISTINCT FROM b.n
)
SELECT DISTINCT _part_key AS k FROM slurm_rows_keyed WHERE ingest_id > $mark
UNION
SELECT DISTINCT coalesce(cluster, '') || chr(0) || coalesce(job_key, '') AS k
FROM core.slurm_jobs
WHERE ingest_id IN (SELECT ingest_id FROM changed)
ORDER BY k
