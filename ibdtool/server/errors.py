"""Server failures as one-line :class:`IbdtoolError` messages, mapped by MySQL error code.

PyMySQL raises ``pymysql.err.*`` with ``(code, message)``; :func:`from_pymysql` turns the codes a
DBA meets (access denied, unreachable server, missing privilege, lost connection, a refused
ALGORITHM/LOCK, a missing codec plugin, an interrupted query) into a sentence that says what to do.
Nothing here ever includes a password: PyMySQL's own messages do not carry it, and ours are built
from the connection's description only.
"""

from __future__ import annotations

from typing import Any

from ibdtool.errors import ExitCode, IbdtoolError

# client errors (CR_*) and server errors (ER_*) this tool reacts to
CR_CONNECTION_ERROR = 2002
CR_CONN_HOST_ERROR = 2003
CR_UNKNOWN_HOST = 2005
CR_SERVER_GONE_ERROR = 2006
CR_SERVER_LOST = 2013
CR_SSL_CONNECTION_ERROR = 2026
ER_ACCESS_DENIED = 1045
ER_TABLEACCESS_DENIED = 1142
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_WRONG_VALUE_FOR_VAR = 1231
ER_LOCK_WAIT_TIMEOUT = 1205
ER_QUERY_INTERRUPTED = 1317
ER_ALTER_OPERATION_NOT_SUPPORTED_REASON = 1846
ER_ILLEGAL_HA_CREATE_OPTION = 1478
ER_TABLE_CORRUPT = 1877
ER_UNSUPPORTED_COMPRESSED_TABLE = 4047  # MariaDB innodb_read_only_compressed

LOST_CONNECTION = frozenset({CR_SERVER_GONE_ERROR, CR_SERVER_LOST, 0})

_HINTS: dict[int, str] = {
    ER_ACCESS_DENIED: "check the user and the password (prompt with -p, MYSQL_PWD, or "
    "~/.my.cnf [client])",
    ER_SPECIFIC_ACCESS_DENIED: "the user lacks a privilege this step needs",
    ER_TABLEACCESS_DENIED: "the user lacks a privilege on that table",
    ER_LOCK_WAIT_TIMEOUT: "another session holds a lock on the table; retry when it is done "
    "or raise --lock-wait-timeout",
    ER_ILLEGAL_HA_CREATE_OPTION: "the server refuses this table option combination",
    ER_WRONG_VALUE_FOR_VAR: "the server refuses the value (MariaDB: is the codec's provider "
    "plugin loaded?)",
    ER_ALTER_OPERATION_NOT_SUPPORTED_REASON: "the server cannot do this without blocking "
    "writes; --algorithm copy accepts that",
    ER_UNSUPPORTED_COMPRESSED_TABLE: "innodb_read_only_compressed is ON",
    ER_TABLE_CORRUPT: "on MariaDB this often means the codec plugin the table needs is not "
    "loaded (plugin_load_add=provider_<codec>)",
}


class ServerError(IbdtoolError):
    """A server or connection failure; ``code`` is the MySQL error number (-1 if none; PyMySQL
    uses 0 for a connection it already knows is gone)."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, message: str, code: int = -1) -> None:
        super().__init__(message)
        self.code = code

    @property
    def lost_connection(self) -> bool:
        return self.code in LOST_CONNECTION

    @property
    def interrupted(self) -> bool:
        return self.code == ER_QUERY_INTERRUPTED


def error_code(exc: BaseException) -> int:
    args: Any = getattr(exc, "args", ())
    if args and isinstance(args[0], int):
        return int(args[0])
    return -1


def error_text(exc: BaseException) -> str:
    args: Any = getattr(exc, "args", ())
    if len(args) >= 2:
        return str(args[1])
    return str(exc) or type(exc).__name__


def from_pymysql(exc: BaseException, where: str) -> ServerError:
    """``where`` names the server or the step (never with a password in it)."""
    code = error_code(exc)
    text = error_text(exc)
    if code in (CR_CONNECTION_ERROR, CR_CONN_HOST_ERROR, CR_UNKNOWN_HOST):
        return ServerError(f"cannot connect to {where}: {text}", code)
    if code in LOST_CONNECTION:
        return ServerError(f"{where}: lost the connection to the server ({text})", code)
    hint = _HINTS.get(code)
    message = f"{where}: {text} (error {code})" if code > 0 else f"{where}: {text}"
    if hint:
        message += f": {hint}"
    return ServerError(message, code)
