-- First and last UTC day with data (hours, attempts, eligible times), for the date filter's bounds.
SELECT min(day) AS first_day, max(day) AS last_day
FROM (
    SELECT min(hour)::DATE AS day FROM occupancy_hourly
    UNION ALL SELECT max(hour)::DATE FROM occupancy_hourly
    UNION ALL SELECT max(as_of)::DATE FROM occupancy_hourly
    UNION ALL SELECT min(least(eligible_at, start_at))::DATE FROM jobs
    UNION ALL SELECT max(start_at)::DATE FROM jobs
    UNION ALL SELECT min(eligible_at)::DATE FROM time_to_start_jobs
    UNION ALL SELECT max(eligible_at)::DATE FROM time_to_start_jobs
);
