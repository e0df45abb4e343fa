-- latest_sshare: the latest loaded `sshare -a -l -P` snapshot of each cluster (account and user rows).
SELECT cluster, account, user_name, raw_shares, norm_shares, effective_usage, level_fs
FROM raw.sshare
WHERE ingest_id = (SELECT max(s2.ingest_id) FROM raw.sshare s2 WHERE s2.cluster = raw.sshare.cluster)
