"""Connection options the way MySQL clients take them, and a thin PyMySQL session.

Where each setting comes from, last one wins (as ``mysql`` does): the environment
(``MYSQL_HOST``, ``MYSQL_TCP_PORT``, ``MYSQL_UNIX_PORT``, ``MYSQL_PWD``), then the option files'
``[client]``, ``[client-server]`` and ``[ibdtool]`` groups (``/etc/my.cnf``,
``/etc/mysql/my.cnf``, ``~/.my.cnf``, following ``!include``/``!includedir``; or only
``--defaults-file``; none with ``--no-defaults``), then the command line, then a password typed at
the prompt. A password is never accepted on the command line, never echoed, never logged and
never handed to a child process: it lives in a :class:`Secret` whose ``repr`` is ``'***'``.

:class:`Session` runs the tagged statements of :mod:`ibdtool.server.sql` with connect/read
timeouts and turns PyMySQL errors into one-line :class:`ServerError` messages.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
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

DEFAULT_OPTION_FILES = ("/etc/my.cnf", "/etc/mysql/my.cnf", "~/.my.cnf")
OPTION_GROUPS = ("client", "client-server", "ibdtool")
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


# --- option files ------------------------------------------------------------------------------


def _option_file_lines(path: Path, seen: set[Path]) -> Iterator[tuple[Path, str]]:
    """The lines of an option file with ``!include``/``!includedir`` expanded in place."""
    try:
        real = path.resolve()
        if real in seen:
            return
        seen.add(real)
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("!includedir"):
            folder = Path(stripped[len("!includedir") :].strip())
            try:
                names = sorted(p for p in folder.iterdir() if p.suffix == ".cnf")
            except OSError:
                names = []
            for inc in names:
                yield from _option_file_lines(inc, seen)
        elif stripped.startswith("!include"):
            yield from _option_file_lines(Path(stripped[len("!include") :].strip()), seen)
        else:
            yield path, line


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    # an unquoted value ends at a comment
    for mark in (" #", "\t#"):
        if mark in value:
            value = value.split(mark, 1)[0].rstrip()
    return value


def read_option_files(
    files: Sequence[str | os.PathLike[str]], groups: Sequence[str] = OPTION_GROUPS
) -> dict[str, str]:
    """Settings from ``groups`` of ``files`` (later files and groups win); keys use ``_``.

    Parsed line by line like the server's own reader: ``key = value``, bare ``key`` flags,
    quotes, ``#``/``;`` comments, and include directives. Unknown groups are ignored.
    """
    found: dict[str, str] = {}
    for f in files:
        per_group: dict[str, dict[str, str]] = {g: {} for g in groups}
        current: str | None = None
        for _, raw in _option_file_lines(Path(os.path.expanduser(f)), set()):
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                current = line[1:-1].strip().lower()
                continue
            if current not in per_group:
                continue
            key, sep, value = line.partition("=")
            key = key.strip().lower().replace("-", "_")
            per_group[current][key] = _unquote(value) if sep else ""
        for g in groups:
            found.update(per_group[g])
    return found


# --- resolving the options --------------------------------------------------------------------


def resolve_options(
    cli: Mapping[str, Any],
    *,
    defaults_file: str | None = None,
    no_defaults: bool = False,
    environ: Mapping[str, str] | None = None,
    prompt_password: bool = False,
    prompt: Callable[[str], str] | None = None,
) -> ConnectionOptions:
    """Merge environment, option files, command line and the prompt (see module doc).

    ``cli`` holds the command-line values (None when not given): host, port, socket, user,
    database, ssl_mode, ssl_ca, ssl_cert, ssl_key, connect_timeout, read_timeout.
    """
    env = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    if env.get("MYSQL_HOST"):
        merged["host"] = env["MYSQL_HOST"]
    if env.get("MYSQL_TCP_PORT"):
        merged["port"] = env["MYSQL_TCP_PORT"]
    if env.get("MYSQL_UNIX_PORT"):
        merged["socket"] = env["MYSQL_UNIX_PORT"]
    if "MYSQL_PWD" in env:
        merged["password"] = env["MYSQL_PWD"]
    if defaults_file is not None and not no_defaults:
        if not Path(defaults_file).expanduser().is_file():
            raise InputError(f"{defaults_file}: no such option file")
        files: Sequence[str] = (defaults_file,)
    else:
        files = () if no_defaults else DEFAULT_OPTION_FILES
    from_files = read_option_files(files)
    for key in ("host", "port", "socket", "user", "password", "database", "ssl_mode"):
        if key in from_files:
            merged[key] = from_files[key]
    for key in ("ssl_ca", "ssl_cert", "ssl_key"):
        if key in from_files:
            merged[key] = from_files[key]
    if "skip_ssl" in from_files or from_files.get("ssl") in ("0", "OFF", "off"):
        merged["ssl_mode"] = "DISABLED"
    for key, value in cli.items():
        if value is not None:
            merged[key] = value
    if prompt_password:
        ask = prompt or (lambda text: getpass.getpass(text))
        merged["password"] = ask("Enter password: ")
    port = merged.get("port")
    try:
        port_n = int(port) if port not in (None, "") else None
    except ValueError:
        raise InputError(f"port {port!r} is not a number") from None
    mode = str(merged["ssl_mode"]).upper() if merged.get("ssl_mode") else None
    if mode is not None and mode not in SSL_MODES:
        raise InputError(f"--ssl-mode {mode}: expected one of {', '.join(SSL_MODES)}")
    host = merged.get("host") or None
    socket_path = merged.get("socket") or None
    if host not in (None, "localhost") or port_n:
        socket_path = None if host not in (None, "localhost") else socket_path
    if port_n and host is None:
        host = "127.0.0.1"  # as mysql: an explicit port means TCP
    if host is None and socket_path is None:
        host = "localhost"
    password = merged.get("password")
    return ConnectionOptions(
        host=host,
        port=port_n,
        socket=socket_path,
        user=merged.get("user") or None,
        password=Secret(str(password)) if password is not None else None,
        database=merged.get("database") or None,
        ssl_mode=mode,
        ssl_ca=merged.get("ssl_ca") or None,
        ssl_cert=merged.get("ssl_cert") or None,
        ssl_key=merged.get("ssl_key") or None,
        connect_timeout=float(merged.get("connect_timeout") or DEFAULT_CONNECT_TIMEOUT),
        read_timeout=float(merged["read_timeout"])
        if merged.get("read_timeout")
        else DEFAULT_READ_TIMEOUT,
    )


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
    "read_option_files",
    "resolve_options",
    "session",
]
