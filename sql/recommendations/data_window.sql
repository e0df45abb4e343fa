-- data_window: the data cut-off (latest as_of over clusters) and the earliest attempt time.
SELECT max(as_of) AS as_of, min(coalesce(eligible_at, start_at)) AS first_at FROM jobs
