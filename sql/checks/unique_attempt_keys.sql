-- Started Slurm rows sharing (cluster, job_key, attempt, step).
SELECT count(*) FROM (
    SELECT cluster, job_key, attempt, step
    FROM core.slurm_jobs
    WHERE start_at IS NOT NULL
    GROUP BY ALL
    HAVING count(*) > 1
);
