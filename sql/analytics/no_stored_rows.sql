-- No stored row: a WHERE clause under which pipelines.warehouse.diff_replace compares nothing
-- and writes only the frame's rows (none, when the frame is empty), yet still checks that the
-- stored table's columns are the frame's (pipelines.analytics.build, the spell counts of an
-- incremental build whose wait keys have no spell).
WHERE false
