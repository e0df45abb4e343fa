-- pending_reason_spells: per Slurm job, each spell of one pending reason from polled squeue (time-weighted, gaps capped), and per Kueue Workload each spell of its topology not-fit statement (METRICS.md).
CREATE OR REPLACE VIEW pending_reason_spells AS
SELECT cluster, job_id, reason, spell_start, spell_end, seconds, sched_nodes, req_switch,
       expected_start, polls
FROM core.pending_reason_spells;
