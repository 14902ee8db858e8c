"""Where a connection's settings come from, the way the ``mysql`` clients take them.

Lowest to highest (a later source overrides an earlier one, setting by setting):

1. the environment: ``MYSQL_HOST``, ``MYSQL_TCP_PORT``, ``MYSQL_UNIX_PORT``, ``MYSQL_PWD``
   (the client library falls back to them when nothing else names the setting);
2. the option files, each read top to bottom, a later line overriding an earlier one whatever its
   group: ``/etc/my.cnf``, ``/etc/mysql/my.cnf``, ``$MARIADB_HOME/my.cnf`` or
   ``$MYSQL_HOME/my.cnf``, ``--defaults-extra-file``, ``~/.my.cnf`` — or only
   ``--defaults-file``, or none with ``--no-defaults``. Groups: ``[client]`` and ``[mysql]``
   (both clients), ``[client-server]``, ``[client-mariadb]``, ``[mariadb-client]`` (MariaDB's)
   and ``[ibdtool]``; ``!include FILE`` and ``!includedir DIR`` (its ``*.cnf``, sorted) are
   followed; a world-writable file is ignored with a warning, as the servers' clients do;
3. the login-path file (``~/.mylogin.cnf``, :mod:`ibdtool.server.loginfile`; MySQL's): groups
   ``[client]``, ``[mysql]`` and ``--login-path``'s, read even with ``--no-defaults`` or
   ``--defaults-file`` as MySQL does;
4. the command line; a password given there (``-pSECRET``, ``--password=SECRET``) is taken with
   the client's warning; ``-p``/``--password`` alone (or a bare ``password`` line in a file)
   asks on the terminal.

The password lives in a :class:`~ibdtool.server.connection.Secret` from here on.
"""

from __future__ import annotations

import getpass
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ibdtool.errors import InputError
from ibdtool.fs import read_capped
from ibdtool.server import loginfile
from ibdtool.server.connection import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    SSL_MODES,
    ConnectionOptions,
    Secret,
)

GLOBAL_OPTION_FILES = ("/etc/my.cnf", "/etc/mysql/my.cnf")
USER_OPTION_FILE = "~/.my.cnf"
OPTION_GROUPS = ("client", "mysql", "client-server", "client-mariadb", "mariadb-client", "ibdtool")
LOGIN_GROUPS = ("client", "mysql")
#: an option file (or login-path file) larger than this is refused, not read into memory
MAX_OPTION_FILE_BYTES = 16 << 20
#: option files one connection may read through !include and !includedir
MAX_OPTION_FILES = 256
PASSWORD_WARNING = "Using a password on the command line interface can be insecure."
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "r": "\r", "\\": "\\", "s": " ", '"': '"', "'": "'"}

Warn = Callable[[str], None]


@dataclass(frozen=True)
class Setting:
    """One ``key[=value]`` line of a group we read; ``value`` None for a bare ``key``."""

    key: str
    value: str | None
    source: str


# --- reading option text ------------------------------------------------------------------------


def _value(raw: str) -> str:
    """An option's value: quotes removed, escapes resolved, an unquoted ``#`` comment cut."""
    raw = raw.strip()
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        out: list[str] = []
        i = 1
        while i < len(raw) and raw[i] != quote:
            if raw[i] == "\\" and i + 1 < len(raw):
                out.append(_ESCAPES.get(raw[i + 1], "\\" + raw[i + 1]))
                i += 2
                continue
            out.append(raw[i])
            i += 1
        return "".join(out)
    if "#" in raw:
        raw = raw.split("#", 1)[0].rstrip()
    out = []
    i = 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw) and raw[i + 1] in _ESCAPES:
            out.append(_ESCAPES[raw[i + 1]])
            i += 2
            continue
        out.append(raw[i])
        i += 1
    return "".join(out)


def _key(raw: str) -> str:
    key = raw.strip().lower().replace("_", "-")
    return key.removeprefix("loose-")


def parse_option_text(
    text: str,
    groups: Sequence[str],
    source: str,
    include: Callable[[str, bool], Iterator[Setting]] | None = None,
) -> Iterator[Setting]:
    """The settings of ``groups`` in one option file's text, in file order."""
    wanted = {g.lower() for g in groups}
    current: str | None = None
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        if s.startswith("!"):
            word, _, arg = s.partition(" ")
            if include is not None and word in ("!include", "!includedir") and arg.strip():
                yield from include(arg.strip(), word == "!includedir")
            continue
        if s.startswith("["):
            current = s[1 : s.find("]")].strip().lower() if "]" in s else None
            continue
        if current not in wanted:
            continue
        key, sep, value = s.partition("=")
        yield Setting(_key(key), _value(value) if sep else None, source)


def read_option_file(
    path: str | os.PathLike[str],
    groups: Sequence[str] = OPTION_GROUPS,
    warn: Warn | None = None,
    _seen: set[Path] | None = None,
) -> Iterator[Setting]:
    """One option file and what it includes; a missing file is no settings."""
    p = Path(os.path.expanduser(path))
    seen = set() if _seen is None else _seen
    if len(seen) >= MAX_OPTION_FILES:
        raise InputError(f"{p}: more than {MAX_OPTION_FILES} option files (!include loop?)")
    try:
        real = p.resolve()
        if real in seen:
            return
        st = p.stat()
        if stat.S_ISDIR(st.st_mode):
            return
        if st.st_mode & stat.S_IWOTH:
            if warn:
                warn(f"World-writable config file '{p}' is ignored.")
            return
        if stat.S_ISCHR(st.st_mode) and os.path.samefile(p, os.devnull):
            return  # --defaults-file=/dev/null: no settings, as the clients read it
    except (OSError, RuntimeError, ValueError):  # a link loop (3.11), a NUL in an !include path
        return
    try:
        text = read_capped(p, MAX_OPTION_FILE_BYTES, "option file").decode("utf-8", "replace")
    except InputError as exc:
        if not os.path.lexists(p):  # gone since the stat: as if missing
            return
        raise InputError(f"option file {exc.message}") from None
    seen.add(real)

    def include(arg: str, is_dir: bool) -> Iterator[Setting]:
        target = Path(os.path.expanduser(arg))
        if not target.is_absolute():
            target = p.parent / target
        if not is_dir:
            yield from read_option_file(target, groups, warn, seen)
            return
        try:
            names = sorted(q for q in target.iterdir() if q.suffix == ".cnf")
        except (OSError, ValueError):
            return
        for q in names:
            yield from read_option_file(q, groups, warn, seen)

    yield from parse_option_text(text, groups, str(p), include)


def read_option_files(
    files: Sequence[str | os.PathLike[str]], groups: Sequence[str] = OPTION_GROUPS
) -> dict[str, str]:
    """The last value of every setting in ``files`` (keys with ``_``; bare keys as ``""``)."""
    found: dict[str, str] = {}
    for f in files:
        for s in read_option_file(f, groups):
            found[s.key.replace("-", "_")] = s.value or ""
    return found


def read_login_path_file(
    path: str, login_path: str | None, warn: Warn | None = None
) -> Iterator[Setting]:
    """``[client]``, ``[mysql]`` and ``[login_path]`` of the login-path file, if there is one."""
    try:
        st = os.stat(path)
        if st.st_mode & (stat.S_IXUSR | stat.S_IRWXG | stat.S_IRWXO):
            if warn:
                warn(f"{path} should be readable/writable only by current user.")
            return
    except OSError:
        return
    try:
        data = read_capped(path, MAX_OPTION_FILE_BYTES, "login-path file")
    except InputError as exc:
        raise InputError(f"login-path file {exc.message}") from None
    try:
        text = loginfile.decrypt(data)
    except loginfile.LoginFileError as exc:
        raise InputError(f"{path}: not a login-path file: {exc}") from None
    groups = [*LOGIN_GROUPS, login_path] if login_path else list(LOGIN_GROUPS)
    yield from parse_option_text(text, groups, path)


def option_file_list(
    defaults_file: str | None,
    defaults_extra_file: str | None,
    no_defaults: bool,
    environ: Mapping[str, str],
) -> list[str]:
    """The option files read, in order (see the module doc)."""
    if no_defaults:
        return []
    if defaults_file is not None:
        if not Path(defaults_file).expanduser().is_file():
            raise InputError(f"--defaults-file {defaults_file}: no such option file")
        return [defaults_file]
    files = list(GLOBAL_OPTION_FILES)
    home = environ.get("MARIADB_HOME") or environ.get("MYSQL_HOME")
    if home:
        files.append(os.path.join(home, "my.cnf"))
    if defaults_extra_file is not None:
        if not Path(defaults_extra_file).expanduser().is_file():
            raise InputError(f"--defaults-extra-file {defaults_extra_file}: no such option file")
        files.append(defaults_extra_file)
    user_home = environ.get("HOME")
    files.append(os.path.join(user_home, ".my.cnf") if user_home else USER_OPTION_FILE)
    return files


# --- resolving ----------------------------------------------------------------------------------

_FILE_KEYS = {
    "host": "host",
    "port": "port",
    "socket": "socket",
    "user": "user",
    "password": "password",
    "database": "database",
    "ssl-mode": "ssl_mode",
    "ssl-ca": "ssl_ca",
    "ssl-cert": "ssl_cert",
    "ssl-key": "ssl_key",
    "connect-timeout": "connect_timeout",
    "protocol": "protocol",
}
_ASK = object()  # "ask for the password on the terminal"


def _apply(merged: dict[str, Any], s: Setting) -> None:
    if s.key == "password" and s.value is None:
        merged["password"] = _ASK
    elif s.key in _FILE_KEYS and s.value is not None:
        merged[_FILE_KEYS[s.key]] = s.value
    elif s.key == "skip-ssl" or (s.key == "ssl" and (s.value or "1").upper() in ("0", "OFF")):
        merged["ssl_mode"] = "DISABLED"
    elif s.key == "ssl-verify-server-cert" and (s.value or "1").upper() not in ("0", "OFF"):
        merged["ssl_mode"] = "VERIFY_IDENTITY"  # MariaDB's spelling


def resolve_options(
    cli: Mapping[str, Any],
    *,
    defaults_file: str | None = None,
    defaults_extra_file: str | None = None,
    no_defaults: bool = False,
    login_path: str | None = None,
    environ: Mapping[str, str] | None = None,
    prompt_password: bool = False,
    prompt: Callable[[str], str] | None = None,
    warn: Warn | None = None,
) -> ConnectionOptions:
    """Merge environment, option files, login-path file, command line and prompt (module doc).

    ``cli`` holds the command-line values (None when not given): host, port, socket, user,
    password, database, protocol, ssl_mode, ssl_ca, ssl_cert, ssl_key, connect_timeout,
    read_timeout.
    """
    env = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    for var, key in (
        ("MYSQL_HOST", "host"),
        ("MYSQL_TCP_PORT", "port"),
        ("MYSQL_UNIX_PORT", "socket"),
    ):
        if env.get(var):
            merged[key] = env[var]
    if "MYSQL_PWD" in env:
        merged["password"] = env["MYSQL_PWD"]
    for f in option_file_list(defaults_file, defaults_extra_file, no_defaults, env):
        for s in read_option_file(f, OPTION_GROUPS, warn):
            _apply(merged, s)
    for s in read_login_path_file(loginfile.login_file_path(dict(env)), login_path, warn):
        _apply(merged, s)
    port_on_cli = bool(cli.get("port"))  # -P 0 is "the default", as for the clients
    for key, value in cli.items():
        if value is not None:
            merged[key] = value
    if prompt_password or merged.get("password") is _ASK:
        ask = prompt or (lambda text: getpass.getpass(text))
        merged["password"] = ask("Enter password: ")
    return _build(merged, port_on_cli)


def _build(merged: dict[str, Any], port_on_cli: bool) -> ConnectionOptions:
    port = merged.get("port")
    try:
        port_n = int(port) if port not in (None, "") else None
    except ValueError:
        raise InputError(f"port {port!r} is not a number") from None
    if port_n is not None and not 0 <= port_n <= 65535:
        raise InputError(f"port {port_n} is out of range")
    port_n = port_n or None
    mode = str(merged["ssl_mode"]).upper() if merged.get("ssl_mode") else None
    if mode is not None and mode not in SSL_MODES:
        raise InputError(f"--ssl-mode {mode}: expected one of {', '.join(SSL_MODES)}")
    protocol = str(merged.get("protocol") or "").upper() or None
    if protocol not in (None, "TCP", "SOCKET"):
        raise InputError(f"--protocol {protocol}: expected TCP or SOCKET")
    host = merged.get("host") or None
    socket_path = merged.get("socket") or None
    local = host in (None, "localhost")
    # as the clients: localhost means the socket unless TCP is asked for; a port given on the
    # command line (not in a file) asks for TCP, as MariaDB's client does since 10.6
    tcp = protocol == "TCP" or not local or (port_on_cli and protocol != "SOCKET")
    if protocol == "SOCKET":
        tcp = False
    if tcp:
        socket_path = None
        if local:
            host = "127.0.0.1"
    elif socket_path is None:
        host = host or "localhost"
    password = merged.get("password")
    return ConnectionOptions(
        host=host,
        port=port_n if tcp else None,
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


# --- the command line ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PasswordArg:
    """What the command line said about the password."""

    value: str | None = None  # -pSECRET / --password=SECRET
    ask: bool = False  # -p / --password alone
    arg: str | None = None  # the argument that held the value, to blank out of the cmdline


def take_password_args(args: Sequence[str]) -> tuple[list[str], PasswordArg]:
    """Take ``-p[VALUE]`` and ``--password[=VALUE]`` out of ``args`` as the clients read them.

    The value is only ever attached (``-pSECRET``): ``-p SECRET`` asks, and ``SECRET`` is the
    next argument. ``-?`` becomes ``--help``. Nothing after ``--`` is touched.
    """
    out: list[str] = []
    result = PasswordArg()
    rest = list(args)
    while rest:
        a = rest.pop(0)
        if a == "--":
            out += [a, *rest]
            break
        if a in ("-p", "--password"):
            result = PasswordArg(None, True)
        elif a.startswith("--password="):
            result = PasswordArg(a.partition("=")[2], False, a)
        elif a.startswith("-p") and not a.startswith("--"):
            result = PasswordArg(a[2:], False, a)
        elif a == "-?":
            out.append("--help")
        else:
            out.append(a)
    return out, result


__all__ = [
    "OPTION_GROUPS",
    "PASSWORD_WARNING",
    "PasswordArg",
    "Setting",
    "option_file_list",
    "parse_option_text",
    "read_login_path_file",
    "read_option_file",
    "read_option_files",
    "resolve_options",
    "take_password_args",
]
