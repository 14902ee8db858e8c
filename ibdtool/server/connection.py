"""Connection options and a thin PyMySQL session.

:class:`ConnectionOptions` is where a connection goes and as whom; where each setting comes from
(environment, option files, login-path file, command line) is :mod:`ibdtool.server.clientopts`.
A password is never echoed, never logged and never handed to a child process: it lives in a
:class:`Secret` whose ``repr`` is ``'***'``.

:class:`Session` runs the tagged statements of :mod:`ibdtool.server.sql` with connect/read
timeouts and turns PyMySQL errors into one-line :class:`ServerError` messages.
"""

from __future__ import annotations

import contextlib
import getpass
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import pymysql
import pymysql.cursors

from ibdtool.errors import InputError
from ibdtool.server.errors import (
    CR_SERVER_LOST,
    CR_SSL_CONNECTION_ERROR,
    ServerError,
    error_code,
    from_pymysql,
)

SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 60.0
DEFAULT_PORT = 3306


class Secret:
    """A password that does not print itself."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


@dataclass(frozen=True)
class ConnectionOptions:
    """Everything needed to open a connection; ``describe()`` is safe to print."""

    host: str | None = None
    port: int | None = None
    socket: str | None = None
    user: str | None = None
    password: Secret | None = field(default=None, repr=False)
    database: str | None = None
    ssl_mode: str | None = None
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float | None = DEFAULT_READ_TIMEOUT

    @property
    def uses_socket(self) -> bool:
        return self.socket is not None and self.host in (None, "localhost") and not self.port

    @property
    def effective_user(self) -> str:
        return self.user or _login_name()

    def describe(self) -> str:
        """``user@host:port`` or ``user@localhost via /path.sock`` (never the password)."""
        if self.uses_socket:
            return f"{self.effective_user}@localhost via {self.socket}"
        return f"{self.effective_user}@{self.host or 'localhost'}:{self.port or DEFAULT_PORT}"

    def with_password(self, password: str) -> ConnectionOptions:
        return replace(self, password=Secret(password))


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "root"


def _ssl_context(opts: ConnectionOptions, mode: str) -> ssl.SSLContext:
    ctx = (
        ssl.create_default_context(cafile=opts.ssl_ca)
        if opts.ssl_ca
        else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    )
    if mode in ("VERIFY_CA", "VERIFY_IDENTITY"):
        if not opts.ssl_ca:
            raise InputError(f"--ssl-mode {mode} needs --ssl-ca")
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.check_hostname = mode == "VERIFY_IDENTITY"
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if opts.ssl_cert:
        try:
            ctx.load_cert_chain(opts.ssl_cert, opts.ssl_key)
        except (OSError, ssl.SSLError) as exc:
            raise InputError(f"--ssl-cert {opts.ssl_cert}: {exc}") from None
    return ctx


# --- the session -------------------------------------------------------------------------------

StatementHook = Callable[[str, float, "str | None"], None]
"""Called after each statement: (sql, seconds, error text or None). Never sees a password."""


class Session:
    """One PyMySQL connection, autocommit, utf8mb4, with errors mapped to :class:`ServerError`."""

    def __init__(
        self,
        opts: ConnectionOptions,
        *,
        read_timeout: float | None = DEFAULT_READ_TIMEOUT,
        role: str = "main",
        on_statement: StatementHook | None = None,
    ) -> None:
        self.opts = opts
        self.role = role
        self.on_statement = on_statement
        self._lock = threading.Lock()
        self.conn = self._open(read_timeout)
        self.thread_id: int = int(self.conn.thread_id())
        sock = getattr(self.conn, "_sock", None)
        self.tls = isinstance(sock, ssl.SSLSocket)

    def _open(self, read_timeout: float | None) -> pymysql.Connection[Any]:
        opts = self.opts
        mode = opts.ssl_mode or ("DISABLED" if opts.uses_socket else "PREFERRED")
        kwargs: dict[str, Any] = {
            "user": opts.effective_user,
            "password": opts.password.reveal() if opts.password else "",
            "database": opts.database,
            "autocommit": True,
            "charset": "utf8mb4",
            "connect_timeout": max(1, int(opts.connect_timeout)),
            "read_timeout": int(read_timeout) if read_timeout else None,
            "write_timeout": int(read_timeout) if read_timeout else None,
            "cursorclass": pymysql.cursors.DictCursor,
            "program_name": "ibdtool",
        }
        if opts.uses_socket:
            kwargs["unix_socket"] = opts.socket
        else:
            kwargs["host"] = opts.host or "localhost"
            kwargs["port"] = opts.port or DEFAULT_PORT
        if mode == "DISABLED":
            kwargs["ssl_disabled"] = True  # PyMySQL ≥ 1.2 would otherwise try TLS by itself
        else:
            kwargs["ssl"] = _ssl_context(opts, mode)
        try:
            return pymysql.connect(**kwargs)
        except pymysql.err.MySQLError as exc:
            if mode == "PREFERRED" and error_code(exc) == CR_SSL_CONNECTION_ERROR:
                kwargs.pop("ssl")
                try:
                    return pymysql.connect(**kwargs)
                except pymysql.err.MySQLError as exc2:
                    raise from_pymysql(exc2, opts.describe()) from None
            if error_code(exc) == CR_SSL_CONNECTION_ERROR:
                raise ServerError(
                    f"{opts.describe()}: --ssl-mode {mode}: the server does not offer TLS",
                    CR_SSL_CONNECTION_ERROR,
                ) from None
            raise from_pymysql(exc, opts.describe()) from None
        except ssl.SSLError as exc:
            raise ServerError(f"{opts.describe()}: TLS handshake failed: {exc}") from None
        except OSError as exc:
            raise ServerError(f"cannot connect to {opts.describe()}: {exc}") from None

    # -- running statements --------------------------------------------------------------------

    def _run(self, sql: str, args: Any, fetch: bool) -> list[dict[str, Any]]:
        start = time.monotonic()
        error: str | None = None
        try:
            with self._lock, self.conn.cursor() as cur:
                cur.execute(sql, args)
                return list(cur.fetchall()) if fetch else []
        except pymysql.err.MySQLError as exc:
            error = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
            raise from_pymysql(exc, self.opts.describe()) from None
        except (OSError, AttributeError) as exc:  # socket gone under PyMySQL
            error = str(exc)
            raise ServerError(
                f"{self.opts.describe()}: lost the connection to the server ({exc})",
                CR_SERVER_LOST,
            ) from None
        finally:
            if self.on_statement is not None:
                self.on_statement(sql, time.monotonic() - start, error)

    def query(self, sql: str, args: Any = None) -> list[dict[str, Any]]:
        return self._run(sql, args, True)

    def query_one(self, sql: str, args: Any = None) -> dict[str, Any] | None:
        rows = self._run(sql, args, True)
        return rows[0] if rows else None

    def scalar(self, sql: str, args: Any = None) -> Any:
        row = self.query_one(sql, args)
        return None if row is None else next(iter(row.values()))

    def execute(self, sql: str, args: Any = None) -> None:
        self._run(sql, args, False)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # already closed, or the socket is gone
            self.conn.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(opts: ConnectionOptions, **kw: Any) -> Session:
    return Session(opts, **kw)


@contextmanager
def session(opts: ConnectionOptions, **kw: Any) -> Iterator[Session]:
    s = Session(opts, **kw)
    try:
        yield s
    finally:
        s.close()


__all__ = [
    "ConnectionOptions",
    "Secret",
    "Session",
    "StatementHook",
    "connect",
    "session",
]
