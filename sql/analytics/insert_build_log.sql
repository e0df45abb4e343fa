-- Record one table a rebuild wrote: $build_id, $table_name, $mode, $rows_deleted, $rows_inserted, $days (JSON or NULL).
INSERT INTO analytics.build_log VALUES ($build_id, $table_name, $mode, $rows_deleted, $rows_inserted, $days)
