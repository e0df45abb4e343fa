-- gpu_activity: per GPU and 5-minute bucket: activity (0-1), the signal used, job and team.
CREATE OR REPLACE VIEW gpu_activity AS
SELECT cluster, host, gpu_uuid, mig_instance, bucket, activity, signal, job_id, team, as_of
FROM analytics.gpu_activity;
