-- job_holds: one row per piece of constant GPUs each attempt held (METRICS.md "GPU holding"; see sql/README.md).
-- An attempt with stored pieces (core.job_holds: a Kubernetes gang whose pods held apart) is one row per
-- piece (end_at NULL: held at the cut-off; a 0-GPU piece: it held nothing); any other attempt is one row,
-- its own gpus over [start_at, end_at). Σ gpus × seconds over an attempt's rows = its gpu_s.
CREATE OR REPLACE VIEW job_holds AS
SELECT j.cluster, j.job_id, j.attempt,
       CASE WHEN h.attempt IS NULL THEN j.start_at ELSE h.start_at END AS start_at,
       CASE WHEN h.attempt IS NULL THEN j.end_at ELSE h.end_at END AS end_at,
       CASE WHEN h.attempt IS NULL THEN CAST(j.gpus AS DOUBLE) ELSE h.gpus END AS gpus,
       h.attempt IS NOT NULL AS pieced
FROM core.jobs j
LEFT JOIN core.job_holds h
       ON h.cluster = j.cluster AND h.job_id = j.job_id AND h.attempt = j.attempt;
