"""The DuckDB warehouse: the only place that opens DuckDB files and formats identifiers into SQL.

DuckDB allows one read-write process or many read-only ones on a file, so every function here
opens short-lived connections in ``with`` blocks, and readers (dashboard, ``goodput sql``) only
ever open the serving copy, which is replaced atomically by :func:`publish_serving_copy`.

Modules: connections and the writer's lock (here), file loads into the raw layer
(:func:`load_parse_results`), the serving copy (:func:`publish_serving_copy`), the statement
files of ``sql/`` (:mod:`pipelines.warehouse.sql`), the table helpers and the named-SQL runner
(:mod:`pipelines.warehouse.tables`), read-only ad hoc SQL
(:mod:`pipelines.warehouse.safe_sql`) and the Parquet lake (:mod:`pipelines.warehouse.lake`).
"""

from __future__ import annotations

from pipelines.warehouse._connection import (
    ATTACHED_AS,
    LOCK_WAIT_S,
    WarehouseLocked,
    attach_read_only,
    connect,
    lock_holder,
    memory_limit,
    pid_alive,
    reader_cursor,
    release_memory,
)
from pipelines.warehouse._loading import (
    LARGE_FILE_BYTES,
    RAW_TABLES,
    IngestStats,
    ensure_raw_tables,
    init_warehouse,
    load_parse_result,
    load_parse_results,
    newest_data_time,
    raw_table_schemas,
    record_rejected,
)
from pipelines.warehouse._serving import (
    PRIVACY_TABLE,
    SERVING_DETAIL_FILTERS,
    SERVING_LEFT_OUT,
    publish_serving_copy,
    remove_stale_copies,
)
from pipelines.warehouse.tables import (
    UTC_DATETIME,
    RowDiff,
    append_rows,
    apply_row_diff,
    as_utc,
    columns_match,
    count_rows,
    diff_job_rows,
    diff_replace,
    diff_replace_from,
    diff_replace_keys,
    drop_table,
    ingest_time_spans,
    job_keys_table,
    read_rows_since,
    read_table,
    refresh_as_of,
    replace_days,
    replace_job_rows,
    replace_table,
    replace_table_from,
    row_diff,
    row_hashes,
    run_named,
    statement_params,
    table_exists,
)

__all__ = [
    "ATTACHED_AS",
    "LARGE_FILE_BYTES",
    "LOCK_WAIT_S",
    "PRIVACY_TABLE",
    "RAW_TABLES",
    "SERVING_DETAIL_FILTERS",
    "SERVING_LEFT_OUT",
    "UTC_DATETIME",
    "IngestStats",
    "RowDiff",
    "WarehouseLocked",
    "append_rows",
    "apply_row_diff",
    "as_utc",
    "attach_read_only",
    "columns_match",
    "connect",
    "count_rows",
    "diff_job_rows",
    "diff_replace",
    "diff_replace_from",
    "diff_replace_keys",
    "drop_table",
    "ensure_raw_tables",
    "ingest_time_spans",
    "init_warehouse",
    "job_keys_table",
    "load_parse_result",
    "load_parse_results",
    "lock_holder",
    "memory_limit",
    "newest_data_time",
    "pid_alive",
    "publish_serving_copy",
    "raw_table_schemas",
    "read_rows_since",
    "read_table",
    "reader_cursor",
    "record_rejected",
    "refresh_as_of",
    "release_memory",
    "remove_stale_copies",
    "replace_days",
    "replace_job_rows",
    "replace_table",
    "replace_table_from",
    "row_diff",
    "row_hashes",
    "run_named",
    "statement_params",
    "table_exists",
]
