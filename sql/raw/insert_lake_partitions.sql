-- Record the cluster-days just loaded (_state_rows: a frame of the table's columns).
INSERT INTO raw.lake_partitions BY NAME SELECT * FROM _state_rows
