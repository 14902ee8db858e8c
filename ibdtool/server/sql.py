"""Every SQL statement ibdtool sends to a server, in one place, each tagged ``/* ibdtool */``.

The tag makes our statements easy to find in PROCESSLIST, the slow log, the general log and
performance_schema. Only statements every supported server line answers alike live here: what
differs by vendor or version (the InnoDB catalog views, PROCESSLIST columns, the buffer pool's
dirty pages, SHOW SLAVE/REPLICA …) is asked of the server's dialect
(:mod:`ibdtool.server.dialects`), which builds it with :data:`TAG`.
Identifiers are quoted with :func:`quote_ident`; values always travel as parameters, except
``KILL QUERY`` whose id is an int we format ourselves. PyMySQL %-formats a statement only when
it is given parameters: those write a literal ``%`` as ``%%``, the others as ``%``.
"""

from __future__ import annotations

from collections.abc import Sequence

TAG = "/* ibdtool */"


def quote_ident(name: str) -> str:
    """A backtick-quoted identifier (backticks inside doubled)."""
    return "`" + name.replace("`", "``") + "`"


def table_ref(schema: str, table: str) -> str:
    return f"{quote_ident(schema)}.{quote_ident(table)}"


# --- who is the server ----------------------------------------------------------------------

SERVER_IDENTITY = (
    f"{TAG} SELECT VERSION() AS version, @@version_comment AS version_comment, "
    "@@datadir AS datadir, @@hostname AS hostname, CONNECTION_ID() AS connection_id"
)


def show_global_variables(names: Sequence[str]) -> str:
    marks = ", ".join(["%s"] * len(names))
    return f"{TAG} SHOW GLOBAL VARIABLES WHERE Variable_name IN ({marks})"


def show_global_status(names: Sequence[str]) -> str:
    marks = ", ".join(["%s"] * len(names))
    return f"{TAG} SHOW GLOBAL STATUS WHERE Variable_name IN ({marks})"


GLOBAL_STATUS_LIKE = f"{TAG} SHOW GLOBAL STATUS LIKE %s"
SESSION_TLS = f"{TAG} SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_cipher', 'Ssl_version')"
THREADS_RUNNING = f"{TAG} SHOW GLOBAL STATUS LIKE 'Threads_running'"

CODEC_PLUGINS = (
    f"{TAG} SELECT PLUGIN_NAME AS name, PLUGIN_STATUS AS status, LOAD_OPTION AS load_option, "
    "PLUGIN_LIBRARY AS library FROM information_schema.PLUGINS "
    "WHERE PLUGIN_NAME LIKE 'provider\\_%'"
)

LONG_TRANSACTIONS = (
    f"{TAG} SELECT COUNT(*) AS n, "
    "MAX(TIMESTAMPDIFF(SECOND, trx_started, NOW())) AS oldest_seconds "
    "FROM information_schema.INNODB_TRX WHERE trx_started < NOW() - INTERVAL %s SECOND"
)

# --- tables and tablespaces -----------------------------------------------------------------

_SYSTEM_SCHEMAS = "('mysql', 'information_schema', 'performance_schema', 'sys')"

TABLES = (
    f"{TAG} SELECT TABLE_SCHEMA AS `schema`, TABLE_NAME AS `table`, ENGINE AS engine, "
    "ROW_FORMAT AS row_format, CREATE_OPTIONS AS create_options, TABLE_ROWS AS table_rows, "
    "DATA_LENGTH AS data_length, INDEX_LENGTH AS index_length "
    "FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
    f"AND TABLE_SCHEMA NOT IN {_SYSTEM_SCHEMAS}"
)
TABLES_IN_SCHEMA = TABLES + " AND TABLE_SCHEMA = %s"
ONE_TABLE = TABLES + " AND TABLE_SCHEMA = %s AND TABLE_NAME = %s"
ONE_TABLE_ANY_SCHEMA = (
    f"{TAG} SELECT TABLE_SCHEMA AS `schema`, TABLE_NAME AS `table`, ENGINE AS engine, "
    "ROW_FORMAT AS row_format, CREATE_OPTIONS AS create_options, TABLE_ROWS AS table_rows, "
    "DATA_LENGTH AS data_length, INDEX_LENGTH AS index_length "
    "FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
)

PARTITIONS = (
    f"{TAG} SELECT TABLE_SCHEMA AS `schema`, TABLE_NAME AS `table`, "
    "PARTITION_NAME AS `partition`, SUBPARTITION_NAME AS subpartition "
    "FROM information_schema.PARTITIONS WHERE PARTITION_NAME IS NOT NULL "
    f"AND TABLE_SCHEMA NOT IN {_SYSTEM_SCHEMAS}"
)

SPECIAL_INDEXES = (
    f"{TAG} SELECT DISTINCT TABLE_SCHEMA AS `schema`, TABLE_NAME AS `table`, "
    "INDEX_NAME AS index_name, INDEX_TYPE AS index_type FROM information_schema.STATISTICS "
    f"WHERE INDEX_TYPE IN ('FULLTEXT', 'SPATIAL') AND TABLE_SCHEMA NOT IN {_SYSTEM_SCHEMAS}"
)

SHOW_CREATE_TABLE = f"{TAG} SHOW CREATE TABLE {{table}}"


def show_create_table(schema: str, table: str) -> str:
    return SHOW_CREATE_TABLE.format(table=table_ref(schema, table))


def probe_readable(schema: str, table: str) -> str:
    return f"{TAG} SELECT 1 FROM {table_ref(schema, table)} LIMIT 1"


# --- the conversion -------------------------------------------------------------------------


def set_global(variable: str) -> str:
    return f"{TAG} SET GLOBAL {variable} = %s"


def show_global(variable: str) -> str:
    return f"{TAG} SELECT @@GLOBAL.{variable} AS value"


SET_LOCK_WAIT_TIMEOUT = f"{TAG} SET SESSION lock_wait_timeout = %s"


def alter_table(schema: str, table: str, clauses: Sequence[str]) -> str:
    return f"{TAG} ALTER TABLE {table_ref(schema, table)} {', '.join(clauses)}"


def optimize_table(schema: str, table: str) -> str:
    return f"{TAG} OPTIMIZE TABLE {table_ref(schema, table)}"


def flush_for_export(schema: str, table: str) -> str:
    return f"{TAG} FLUSH TABLES {table_ref(schema, table)} FOR EXPORT"


UNLOCK_TABLES = f"{TAG} UNLOCK TABLES"
ENGINE_STATUS = f"{TAG} SHOW ENGINE INNODB STATUS"


def kill_query(thread_id: int) -> str:
    return f"{TAG} KILL QUERY {int(thread_id)}"


# --- performance_schema progress --------------------------------------------------------------

PFS_CONSUMERS = (
    f"{TAG} SELECT NAME AS name, ENABLED AS enabled FROM performance_schema.setup_consumers "
    "WHERE NAME IN ('global_instrumentation', 'thread_instrumentation', 'events_stages_current')"
)
PFS_SET_CONSUMER = (
    f"{TAG} UPDATE performance_schema.setup_consumers SET ENABLED = %s WHERE NAME = %s"
)
PFS_INSTRUMENTS = (
    f"{TAG} SELECT NAME AS name, ENABLED AS enabled, TIMED AS timed "
    "FROM performance_schema.setup_instruments "
    "WHERE NAME LIKE 'stage/innodb/alter table%' OR NAME = 'stage/sql/copy to tmp table'"
)
PFS_SET_INSTRUMENT = (
    f"{TAG} UPDATE performance_schema.setup_instruments SET ENABLED = %s, TIMED = %s "
    "WHERE NAME = %s"
)
PFS_THREAD_INSTRUMENTED = (
    f"{TAG} SELECT INSTRUMENTED AS instrumented FROM performance_schema.threads "
    "WHERE PROCESSLIST_ID = %s"
)
PFS_INSTRUMENT_THREAD = (
    f"{TAG} UPDATE performance_schema.threads SET INSTRUMENTED = 'YES' WHERE PROCESSLIST_ID = %s"
)
PFS_STAGE = (
    f"{TAG} SELECT s.EVENT_NAME AS event_name, s.WORK_COMPLETED AS work_completed, "
    "s.WORK_ESTIMATED AS work_estimated FROM performance_schema.events_stages_current s "
    "JOIN performance_schema.threads t ON t.THREAD_ID = s.THREAD_ID WHERE t.PROCESSLIST_ID = %s"
)


# --- the workload probe (ibdtool.server.probe): reads only --------------------------------------

PROBE_TAG = "/* ibdtool probe */"
PROBE_READ_ONLY = f"{PROBE_TAG} SET SESSION TRANSACTION READ ONLY"
PRIMARY_KEY_COLUMNS = (
    f"{TAG} SELECT s.COLUMN_NAME AS name, c.DATA_TYPE AS type "
    "FROM information_schema.STATISTICS s JOIN information_schema.COLUMNS c "
    "ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME "
    "AND c.COLUMN_NAME = s.COLUMN_NAME "
    "WHERE s.TABLE_SCHEMA = %s AND s.TABLE_NAME = %s AND s.INDEX_NAME = 'PRIMARY' "
    "ORDER BY s.SEQ_IN_INDEX"
)


def probe_key_bounds(schema: str, table: str, column: str) -> str:
    """The first key column's ends: two B-tree descents, to its first and last leaf."""
    c = quote_ident(column)
    return f"{PROBE_TAG} SELECT MIN({c}) AS lo, MAX({c}) AS hi FROM {table_ref(schema, table)}"


def probe_seek(schema: str, table: str, columns: Sequence[str]) -> str:
    """The first row at or after a key value: one descent of the clustered index, one row
    (``LIMIT %s``: 1 for a point read, a few for a short range)."""
    order = ", ".join(quote_ident(c) for c in columns)
    return (
        f"{PROBE_TAG} SELECT * FROM {table_ref(schema, table)} "
        f"WHERE {quote_ident(columns[0])} >= %s ORDER BY {order} LIMIT %s"
    )


def probe_point(schema: str, table: str, columns: Sequence[str]) -> str:
    """One row by its whole primary key: the repeat of a key the probe has read."""
    where = " AND ".join(f"{quote_ident(c)} = %s" for c in columns)
    return f"{PROBE_TAG} SELECT * FROM {table_ref(schema, table)} WHERE {where}"


PFS_THREAD_ID = (
    f"{TAG} SELECT THREAD_ID AS thread_id FROM performance_schema.threads WHERE PROCESSLIST_ID = %s"
)
PFS_STATEMENT_CONSUMERS = (
    f"{TAG} SELECT NAME AS name, ENABLED AS enabled FROM performance_schema.setup_consumers "
    "WHERE NAME IN ('events_statements_current', 'events_statements_history', "
    "'statements_digest')"
)
#: the probe session's statements since an event id (performance_schema's own timings, ps)
PFS_THREAD_STATEMENTS = (
    f"{TAG} SELECT EVENT_ID AS event_id, TIMER_WAIT AS timer_wait, ROWS_SENT AS rows_sent, "
    "SQL_TEXT AS sql_text FROM performance_schema.events_statements_history "
    "WHERE THREAD_ID = %s AND EVENT_ID > %s ORDER BY EVENT_ID"
)
PFS_TABLE_IO = (
    f"{TAG} SELECT COUNT_FETCH AS fetches, SUM_TIMER_FETCH AS fetch_ps, COUNT_STAR AS waits, "
    "SUM_TIMER_WAIT AS wait_ps FROM performance_schema.table_io_waits_summary_by_table "
    "WHERE OBJECT_SCHEMA = %s AND OBJECT_NAME = %s"
)
PFS_FILE_IO = (
    f"{TAG} SELECT COUNT(*) AS files, SUM(COUNT_READ) AS read_count, "
    "SUM(SUM_NUMBER_OF_BYTES_READ) AS bytes_read, SUM(SUM_TIMER_READ) AS read_ps "
    "FROM performance_schema.file_summary_by_instance WHERE FILE_NAME LIKE %s"
)
PFS_DIGESTS = (
    f"{TAG} SELECT DIGEST AS digest, LEFT(DIGEST_TEXT, 200) AS text, COUNT_STAR AS n, "
    "SUM_TIMER_WAIT AS wait_ps, SUM_ROWS_SENT AS rows_sent, SUM_ROWS_EXAMINED AS rows_examined "
    "FROM performance_schema.events_statements_summary_by_digest "
    "WHERE DIGEST_TEXT LIKE %s OR DIGEST_TEXT LIKE %s"
)
PFS_THREAD_SELECTS = (
    f"{TAG} SELECT COUNT_STAR AS n, SUM_TIMER_WAIT AS wait_ps, SUM_ROWS_SENT AS rows_sent "
    "FROM performance_schema.events_statements_summary_by_thread_by_event_name "
    "WHERE THREAD_ID = %s AND EVENT_NAME = 'statement/sql/select'"
)
INNODB_CMP = (
    f"{TAG} SELECT SUM(compress_ops) AS compress_ops, SUM(uncompress_ops) AS uncompress_ops, "
    "SUM(uncompress_time) AS uncompress_s FROM information_schema.INNODB_CMP"
)


def pool_pages_of_spaces(n: int) -> str:
    """Pages of these tablespaces in the buffer pool (a walk of the whole pool: only where the
    pool is small, :data:`ibdtool.server.probe.POOL_WALK_MAX`)."""
    marks = ", ".join(["%s"] * n)
    return (
        f"{TAG} SELECT COUNT(*) AS pages FROM information_schema.INNODB_BUFFER_PAGE "
        f"WHERE SPACE IN ({marks})"
    )
