-- dcgm_samples: DCGM samples in long format after label normalisation.
CREATE OR REPLACE VIEW dcgm_samples AS
SELECT ts, cluster, host, gpu_uuid, gpu_index, mig_profile, mig_instance, metric, value, pod,
       namespace, container, hpc_job
FROM raw.dcgm_samples;
