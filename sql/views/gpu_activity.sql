-- gpu_activity: per GPU (or MIG instance), 5-minute bucket and allocation: activity (0-1), the signal used, job, team and how it was attributed.
CREATE OR REPLACE VIEW gpu_activity AS
SELECT cluster, host, gpu_uuid, mig_instance, bucket, activity, signal, job_id, attempt, team,
       attribution, job_group, gpus, as_of
FROM analytics.gpu_activity LEFT JOIN core.build_cutoffs USING (cluster);
