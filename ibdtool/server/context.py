"""One open server: its connection, flavor, the settings we look at, and its local datadir.

:class:`Server` is what every other module of this package takes: it opens the main session,
reads ``VERSION()``, the InnoDB/performance_schema variables and the ``Innodb_have_*`` status
once, and knows whether the datadir can be read from here (the server's ``@@datadir``, or
``--datadir`` when this machine sees it under another path).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from ibdtool.parsers import codecs
from ibdtool.server import localfs, sql
from ibdtool.server.connection import ConnectionOptions, Session, StatementHook
from ibdtool.server.dialects import Dialect, parse_flavor

VARIABLES = (
    "innodb_page_size",
    "innodb_file_per_table",
    "innodb_checksum_algorithm",
    "innodb_compression_algorithm",
    "innodb_compression_level",
    "innodb_compression_default",
    "innodb_default_row_format",
    "innodb_read_only_compressed",
    "innodb_file_format",
    "innodb_optimize_fulltext_only",
    "innodb_online_alter_log_max_size",
    "innodb_tmpdir",
    "tmpdir",
    "performance_schema",
    "have_ssl",
    "lock_wait_timeout",
    "version_compile_os",
    "read_only",
    "innodb_read_only",
)
MAIN_LOCK_WAIT_TIMEOUT = 5  # seconds, for the main connection's own queries

STATUS = (
    *(f"Innodb_have_{c.name}" for c in codecs.vendor_codecs("mariadb") if c.mariadb_provider),
    "Innodb_have_punch_hole",
)


def on(value: Any) -> bool:
    return str(value).upper() in ("ON", "1", "YES", "TRUE")


class Server:
    """A live server we look at and may convert tables on (see module doc)."""

    def __init__(
        self,
        opts: ConnectionOptions,
        *,
        datadir: str | None = None,
        on_statement: StatementHook | None = None,
    ) -> None:
        self.opts = opts
        self.on_statement = on_statement
        self.session = Session(opts, role="main", on_statement=on_statement)
        try:
            ident = self.session.query_one(sql.SERVER_IDENTITY) or {}
            self.flavor: Dialect = parse_flavor(
                str(ident.get("version", "")), str(ident.get("version_comment") or "")
            )
            self.server_datadir = str(ident.get("datadir") or "")
            self.hostname = str(ident.get("hostname") or "")
            self.datadir_override = datadir
            # catalog reads and probes must never queue behind a DDL's metadata lock
            self.session.execute(sql.SET_LOCK_WAIT_TIMEOUT, (MAIN_LOCK_WAIT_TIMEOUT,))
            self.variables = self.read_variables(VARIABLES)
            self.status = self.read_status(STATUS)
        except BaseException:
            self.session.close()
            raise

    # -- reading settings ------------------------------------------------------------------------

    def read_variables(self, names: Sequence[str]) -> dict[str, str]:
        rows = self.session.query(sql.show_global_variables(names), tuple(names))
        return {str(r["Variable_name"]).lower(): str(r["Value"]) for r in rows}

    def read_status(self, names: Sequence[str]) -> dict[str, str]:
        rows = self.session.query(sql.show_global_status(names), tuple(names))
        return {str(r["Variable_name"]): str(r["Value"]) for r in rows}

    def variable(self, name: str, fresh: bool = False) -> str | None:
        if fresh:
            value = self.session.scalar(sql.show_global(name))
            self.variables[name] = "" if value is None else str(value)
        return self.variables.get(name)

    def threads_running(self) -> int:
        row = self.session.query_one(sql.THREADS_RUNNING)
        return int(row["Value"]) if row else 0

    @property
    def page_size(self) -> int:
        return int(self.variables.get("innodb_page_size") or 16384)

    @property
    def performance_schema(self) -> bool:
        return on(self.variables.get("performance_schema"))

    def has_codec(self, codec: str) -> bool:
        """Can this server compress pages with ``codec`` right now?"""
        if codec not in self.flavor.page_codecs:
            return False
        variable = self.flavor.codec_status(codec)
        return variable is None or on(self.status.get(variable))

    # -- the datadir -----------------------------------------------------------------------------

    @cached_property
    def local_datadir(self) -> Path | None:
        return localfs.local_datadir(self.datadir_override or self.server_datadir)

    @cached_property
    def filesystem(self) -> localfs.FsInfo | None:
        return localfs.filesystem(self.local_datadir) if self.local_datadir else None

    @cached_property
    def punch_hole(self) -> tuple[bool | None, str]:
        """(supported, how we know): MariaDB says so; else probe the local datadir."""
        have = self.status.get("Innodb_have_punch_hole")
        if have is not None:
            return on(have), "Innodb_have_punch_hole"
        if self.local_datadir is not None:
            probed = localfs.punch_hole_supported(self.local_datadir)
            if probed is not None:
                return probed, "fallocate(PUNCH_HOLE) on a temporary file in the datadir"
        return None, "unknown: the datadir is not readable from here"

    # -- sessions --------------------------------------------------------------------------------

    def new_session(self, role: str, read_timeout: float | None = 30.0) -> Session:
        s = Session(self.opts, role=role, read_timeout=read_timeout, on_statement=self.on_statement)
        if role == "main":
            s.execute(sql.SET_LOCK_WAIT_TIMEOUT, (MAIN_LOCK_WAIT_TIMEOUT,))
        return s

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
