-- telemetry_coverage_team_daily: observed ÷ allocated GPU-seconds per cluster, team (NULL = all teams) and UTC day.
CREATE OR REPLACE VIEW telemetry_coverage_team_daily AS
-- Each attempt counts by its pieces of held GPUs (job_holds, METRICS.md "GPU holding"), as the waterfall does.
WITH spans AS (
    SELECT j.cluster, j.job_id, j.attempt, j.team, h.gpus, c.as_of,
           timezone('UTC', h.start_at) AS start_utc,
           timezone('UTC', least(coalesce(h.end_at, c.as_of), c.as_of)) AS stop_utc
    FROM core.jobs j
    JOIN job_holds h ON h.cluster = j.cluster AND h.job_id = j.job_id AND h.attempt = j.attempt
    LEFT JOIN core.build_cutoffs c ON c.cluster = j.cluster
    WHERE j.gpus > 0 AND j.start_at IS NOT NULL AND h.gpus > 0 AND h.start_at IS NOT NULL
),
allocated AS (
    SELECT s.cluster, s.team, d.day,
           s.gpus * epoch(least(s.stop_utc, d.day + INTERVAL 1 DAY) - greatest(s.start_utc, d.day))
               AS allocated_gpu_s,
           0.0 AS observed_gpu_s, s.as_of
    FROM spans s,
         LATERAL (SELECT unnest(range(date_trunc('day', s.start_utc), s.stop_utc, INTERVAL 1 DAY))
                  AS day) d
    WHERE s.stop_utc > s.start_utc
),
seen AS (
    SELECT a.cluster, a.job_id, a.attempt, timezone('UTC', a.bucket) AS b, sum(a.gpus) AS gpus
    FROM analytics.gpu_activity a
    WHERE a.attribution IN ('label_hpc_job', 'pod', 'gres_index', 'whole_node')
      AND a.attempt IS NOT NULL AND a.activity IS NOT NULL
    GROUP BY ALL
),
observed AS (
    SELECT s.cluster, s.team, date_trunc('day', v.b) AS day, 0.0 AS allocated_gpu_s,
           least(v.gpus, s.gpus) * greatest(0.0, epoch(
               least(s.stop_utc, v.b + INTERVAL 5 MINUTE) - greatest(s.start_utc, v.b)))
               AS observed_gpu_s,
           s.as_of
    FROM seen v JOIN spans s USING (cluster, job_id, attempt)
),
both_ AS (SELECT * FROM allocated UNION ALL SELECT * FROM observed)
SELECT cluster, team, day::DATE AS day, sum(allocated_gpu_s) AS allocated_gpu_s,
       sum(observed_gpu_s) AS observed_gpu_s,
       sum(observed_gpu_s) / nullif(sum(allocated_gpu_s), 0) AS telemetry_coverage,
       max(as_of) AS as_of
FROM both_
GROUP BY GROUPING SETS ((cluster, team, day), (cluster, day));
