-- data_quality: one row per finding (GPUs not tracked, DST repairs, rejected rows, observed capacity,
-- Kueue admissions without pods, unattributed GPU-hours, registry pools that match nothing,
-- Slurm-on-Kubernetes checks).
CREATE OR REPLACE VIEW data_quality AS
SELECT cluster, day, partition, "check", value, detail, as_of
FROM analytics.data_quality LEFT JOIN core.build_cutoffs USING (cluster);
