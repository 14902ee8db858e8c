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
