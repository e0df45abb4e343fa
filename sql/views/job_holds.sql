-- job_holds: one row per piece of constant GPUs each attempt held (METRICS.md "GPU holding"; see sql/README.md).
-- An attempt with stored pieces (core.job_holds: a Kubernetes gang whose pods held apart, stored per node) is one
-- row per piece of its nodes' GPUs added up (end_at NULL: held at the cut-off; a 0-GPU piece: it held nothing); any
-- other attempt is one row, its own gpus over [start_at, end_at). Σ gpus × seconds over an attempt's rows = its gpu_s.
CREATE OR REPLACE VIEW job_holds AS
WITH steps AS (  -- each node's piece: + its GPUs at its start, − them at its end
    SELECT cluster, job_id, attempt, start_at AS t, gpus AS d FROM core.job_holds WHERE gpus > 0
    UNION ALL
    SELECT cluster, job_id, attempt, end_at, -gpus FROM core.job_holds WHERE gpus > 0 AND end_at IS NOT NULL
), levels AS (
    SELECT cluster, job_id, attempt, t AS start_at,
           lead(t) OVER w AS end_at,
           sum(d) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS gpus
    FROM (SELECT cluster, job_id, attempt, t, sum(d) AS d FROM steps GROUP BY cluster, job_id, attempt, t)
    WINDOW w AS (PARTITION BY cluster, job_id, attempt ORDER BY t)
), pieces AS (  -- no piece where none was held (1e-9: the residue of adding fractional GPUs)
    SELECT cluster, job_id, attempt, start_at, end_at, gpus FROM levels WHERE gpus > 1e-9
    UNION ALL
    SELECT cluster, job_id, attempt, start_at, end_at, gpus FROM core.job_holds WHERE gpus <= 0
)
SELECT j.cluster, j.job_id, j.attempt,
       CASE WHEN h.attempt IS NULL THEN j.start_at ELSE h.start_at END AS start_at,
       CASE WHEN h.attempt IS NULL THEN j.end_at ELSE h.end_at END AS end_at,
       CASE WHEN h.attempt IS NULL THEN CAST(j.gpus AS DOUBLE) ELSE h.gpus END AS gpus,
       h.attempt IS NOT NULL AS pieced
FROM core.jobs j
LEFT JOIN pieces h
       ON h.cluster = j.cluster AND h.job_id = j.job_id AND h.attempt = j.attempt;
