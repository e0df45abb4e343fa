-- Attempts that end before they start.
SELECT count(*) FROM core.jobs WHERE end_at < start_at;
