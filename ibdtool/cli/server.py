"""``ibdtool server status|tables`` and ``ibdtool migrate``: the live-server commands.

Connection options follow the MySQL clients (``-h/--host``, ``-P/--port``, ``-S/--socket``,
``-u/--user``, ``-p[PASSWORD]``, ``--defaults-file``, ``--defaults-extra-file``,
``--login-path``, ``--no-defaults``, ``--ssl-*``; help is ``--help`` or ``-?``, as theirs);
where each setting comes from is :mod:`ibdtool.server.clientopts`. The work lives in
:mod:`ibdtool.server`; this module parses options, asks for confirmation, handles Ctrl-C and
prints.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ibdtool.cli.complete import complete_targets
from ibdtool.cli.deprecated import deprecated_option
from ibdtool.errors import ExitCode, InputError
from ibdtool.parsers import codecs
from ibdtool.present import shown

F = TypeVar("F", bound=Callable[..., Any])
_MYSQL_CODECS = ", ".join(codecs.names("mysql"))
_MARIADB_ONLY = ", ".join(c for c in codecs.names("mariadb") if c not in codecs.names("mysql"))

#: the connection options every connecting command takes, as keyword names
CONNECTION_KEYS = (
    "host",
    "port",
    "socket",
    "user",
    "database",
    "protocol",
    "ssl_mode",
    "ssl_ca",
    "ssl_cert",
    "ssl_key",
    "connect_timeout",
    "read_timeout",
)


#: as the mysql clients: -h is the host, help is --help or -?
CLIENT_CONTEXT = {"help_option_names": ["-?", "--help"]}


class ClientCommand(click.Command):
    """A command with the mysql clients' ``-p[PASSWORD]``, ``--password[=PASSWORD]`` and ``-?``
    (click cannot parse an option whose value is only ever attached)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from ibdtool.server import take_password_args

        args, ctx.meta["ibdtool.password"] = take_password_args(args)
        return super().parse_args(ctx, args)


class ClientGroup(click.Group):
    """``-?`` as ``--help`` for a group of client commands."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args[:1] == ["-?"]:
            args = ["--help", *args[1:]]
        return super().parse_args(ctx, args)


def connection_options(f: F) -> F:
    """The MySQL-client connection options, shared by every server command."""
    opts = [
        click.option("-h", "--host", help="Server host (default: localhost, i.e. the socket)."),
        click.option("-P", "--port", type=click.IntRange(0, 65535), help="TCP port."),
        click.option("-S", "--socket", help="Unix socket file."),
        click.option("-u", "--user", help="User (default: your login name)."),
        click.option(
            "-p",
            "--password",
            "ask_password",
            is_flag=True,
            help="-p or --password: ask for it; -pSECRET or --password=SECRET: take it "
            "(with a warning: other users can see it); else MYSQL_PWD or the option files.",
        ),
        click.option("-D", "--database", help="Default schema for TABLE names without one."),
        click.option(
            "--protocol",
            type=click.Choice(["TCP", "SOCKET"], case_sensitive=False),
            help="TCP even to localhost, or the socket.",
        ),
        click.option(
            "--defaults-file",
            type=click.Path(dir_okay=False),
            help="Read only this option file (and the login-path file).",
        ),
        click.option(
            "--defaults-extra-file",
            type=click.Path(dir_okay=False),
            help="Read this option file after the global ones, before ~/.my.cnf.",
        ),
        click.option(
            "--login-path",
            help="Also read this group of ~/.mylogin.cnf (mysql_config_editor's file).",
        ),
        click.option(
            "--no-defaults", is_flag=True, help="Read no option file (but ~/.mylogin.cnf)."
        ),
        click.option(
            "--ssl-mode",
            type=click.Choice(
                ["DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"],
                case_sensitive=False,
            ),
            help="TLS: default PREFERRED over TCP, DISABLED over a socket.",
        ),
        click.option("--ssl-ca", type=click.Path(dir_okay=False), help="CA certificate file."),
        click.option("--ssl-cert", type=click.Path(dir_okay=False), help="Client certificate."),
        click.option("--ssl-key", type=click.Path(dir_okay=False), help="Client key."),
        click.option(
            "--connect-timeout", type=click.FloatRange(min=1), help="Seconds (default 10)."
        ),
        click.option(
            "--read-timeout",
            type=click.FloatRange(min=1),
            help="Seconds for each catalog query (default 60; DDL has none).",
        ),
        click.option(
            "--datadir",
            type=click.Path(file_okay=False),
            help="Where this machine sees the server's datadir, if not at @@datadir.",
        ),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _prompt_password(text: str) -> str:
    import getpass

    try:
        with open("/dev/tty"):
            pass
    except OSError:
        raise InputError(
            "-p: no terminal to ask for the password on; use MYSQL_PWD or an option file"
        ) from None
    return getpass.getpass(text)


def resolve_connection(kw: dict[str, Any]) -> tuple[Any, str | None]:
    """The connection options and ``--datadir`` of :func:`connection_options`, taken out of
    ``kw`` (asks for the password here when ``-p`` was given)."""
    from ibdtool.server import PASSWORD_WARNING, PasswordArg, resolve_options

    cli = {k: kw.pop(k, None) for k in CONNECTION_KEYS}
    kw.pop("ask_password", None)  # -p is read by ClientCommand, before click
    ctx = click.get_current_context(silent=True)
    pw = ctx.meta.get("ibdtool.password") if ctx is not None else None
    pw = pw if isinstance(pw, PasswordArg) else PasswordArg()
    if pw.value is not None:
        from ibdtool.server import scrub_quietly

        if pw.arg:
            scrub_quietly(pw.arg, pw.value)  # out of `ps`, as the clients do
        click.echo(f"ibdtool: [Warning] {PASSWORD_WARNING}", err=True)
        cli["password"] = pw.value

    def warn(text: str) -> None:
        click.echo(f"ibdtool: [Warning] {shown(text)}", err=True)

    opts = resolve_options(
        cli,
        defaults_file=kw.pop("defaults_file", None),
        defaults_extra_file=kw.pop("defaults_extra_file", None),
        no_defaults=kw.pop("no_defaults", False),
        login_path=kw.pop("login_path", None),
        prompt_password=pw.ask,
        prompt=_prompt_password,
        warn=warn,
    )
    return opts, kw.pop("datadir", None)


def _open_server(kw: dict[str, Any]) -> Any:
    from ibdtool.server import Server

    opts, datadir = resolve_connection(kw)
    return Server(opts, datadir=datadir)


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


@click.group(cls=ClientGroup, context_settings=CLIENT_CONTEXT)
def server() -> None:
    """Look at a live MariaDB/MySQL server: settings and tablespaces."""


@server.command(cls=ClientCommand, context_settings=CLIENT_CONTEXT)
@connection_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.option("--wide", is_flag=True, help="One line per value, whatever the terminal's width.")
def status(as_json: bool, wide: bool, **kw: Any) -> None:
    """Flavor, version, page size, checksums, compression, codecs, punch hole, block size."""
    from ibdtool.server import server_status

    with _open_server(kw) as srv:
        st = server_status(srv)
    if as_json:
        _emit_json(st.to_json())
    else:
        from ibdtool.cli.server_display import print_status

        print_status(st, wide)


@server.command(cls=ClientCommand, context_settings=CLIENT_CONTEXT)
@click.argument("databases", metavar="[DATABASE]...", nargs=-1)
@connection_options
@deprecated_option("--schema", "DATABASE", "old_schemas", multiple=True)
@click.option("--all", "show_all", is_flag=True, help="Also tablespaces of no listed table.")
@click.option("--no-pages", is_flag=True, help="Do not read the files' pages (faster).")
@click.option(
    "--sort",
    type=click.Choice(["name", "size"]),
    default="name",
    show_default=True,
    help="By schema and table name, or by size with the FULLTEXT tablespaces, largest first.",
)
@click.option("--json", "as_json", is_flag=True, help="A JSON list, one object per table.")
@click.option("--wide", is_flag=True, help="Every column, whatever the terminal's width.")
def tables(
    databases: tuple[str, ...],
    old_schemas: tuple[str, ...],
    show_all: bool,
    no_pages: bool,
    sort: str,
    as_json: bool,
    wide: bool,
    **kw: Any,
) -> None:
    """Every table with FILE_SIZE, ALLOCATED_SIZE, row format, compression and page state.

    With DATABASE names (as mysqlshow takes them), only their tables.
    """
    from ibdtool.parsers.filename import encode
    from ibdtool.server import list_tables, space_kind

    schemas = [*databases, *old_schemas]
    with _open_server(kw) as srv:
        found, others = list_tables(srv, schemas=schemas or None, with_pages=not no_pages)
        vendor = srv.flavor.name
    if schemas:
        folders = {*schemas, *(encode(s) for s in schemas)}
        others = [s for s in others if s.name.split("/")[0] in folders]
    if not show_all:
        others = []
    if sort == "size":
        found.sort(key=lambda t: -(t.total_file_size or 0))
        others.sort(key=lambda s: -(s.file_size or 0))
    if as_json:
        docs = [t.to_json(vendor) for t in found]
        docs += [{"tablespace": s.to_json(vendor), "kind": space_kind(s)} for s in others]
        _emit_json(docs)
    else:
        from ibdtool.cli.server_display import print_tables

        print_tables(found, others, vendor, wide)


def probe_options(prefix: str = "") -> Callable[[F], F]:
    """How much a workload probe reads and how gently: ``server probe --points …`` and
    ``migrate --probe --probe-points …`` (``prefix`` "probe-")."""

    def add(f: F) -> F:
        for opt in reversed(_probe_opts(prefix)):
            f = opt(f)
        return f

    return add


def _probe_opts(prefix: str) -> list[Callable[[Any], Any]]:
    return [
        click.option(
            f"--{prefix}points",
            "points",
            type=click.IntRange(1, 10000),
            default=100,
            show_default=True,
            help="Keys to read by primary key (each twice: a first read and a repeat).",
        ),
        click.option(
            f"--{prefix}ranges",
            "ranges",
            type=click.IntRange(0, 1000),
            default=20,
            show_default=True,
            help="Short range reads.",
        ),
        click.option(
            f"--{prefix}range-rows",
            "range_rows",
            type=click.IntRange(1, 1000),
            default=20,
            show_default=True,
            help="Rows each range read returns.",
        ),
        click.option(
            f"--{prefix}rate",
            "rate",
            type=click.FloatRange(min=0.1, max=1000),
            default=20,
            show_default=True,
            help="Statements a second, at most.",
        ),
        click.option(
            f"--{prefix}share",
            "share",
            type=click.FloatRange(min=0.001, max=0.5),
            default=0.05,
            show_default=True,
            help="Share of the time the probe's statements may take (its own clock): after a "
            "read of d seconds it waits at least d*(1-share)/share.",
        ),
        click.option(
            f"--{prefix}max-load",
            "probe_max_load",
            metavar="STATUS=N[,…]",
            default="Threads_running=8",
            show_default=True,
            help="Stop the probe when a SHOW GLOBAL STATUS figure, read before each statement, "
            "is at least N (Threads_running counts the probe's own status read).",
        ),
        click.option(f"--{prefix}seed", "seed", type=int, help="Draw the same keys again."),
    ]


def probe_settings(kw: dict[str, Any]) -> Any:
    """The :class:`~ibdtool.server.ProbeSettings` of :func:`probe_options`, taken out of ``kw``."""
    from ibdtool.server import ProbeSettings, parse_load

    load = kw.pop("probe_max_load", None)
    return ProbeSettings(
        points=kw.pop("points"),
        ranges=kw.pop("ranges"),
        range_rows=kw.pop("range_rows"),
        rate=kw.pop("rate"),
        share=kw.pop("share"),
        max_load=parse_load(load, "--max-load") if load else {},
        seed=kw.pop("seed", None),
    )


@server.command(cls=ClientCommand, context_settings=CLIENT_CONTEXT)
@click.argument("table_name", metavar="DB.TABLE")
@connection_options
@probe_options()
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def probe(table_name: str, as_json: bool, **kw: Any) -> None:
    """Measure what reads of one table cost now: a bounded, read-only probe.

    Point reads by primary key (keys drawn between the key's MIN and MAX, each read twice:
    first, then again warm) and short range reads, a fixed small number at a low rate, on one
    connection; it stops when the server is busy (--max-load). Prints latency p50/p95/p99
    and rows a second, cold and warm, with what performance_schema saw over the same window.
    It writes nothing; each read takes the table's shared metadata lock for its moment, no
    row lock. A probe is not the workload (docs/cost.md).
    """
    from ibdtool.server import probe_table, split_table_name

    settings = probe_settings(kw)
    schema, table = split_table_name(table_name, kw.get("database"))
    with _open_server(kw) as srv:
        result = probe_table(srv, schema, table, settings)
    if as_json:
        _emit_json(result.to_json())
    else:
        from ibdtool.cli.server_display import print_probe

        print_probe([result])
    sys.exit(ExitCode.OK if result.reads else ExitCode.FOUND)


# --- migrate ------------------------------------------------------------------------------------


class _Interrupts:
    """First Ctrl-C (or SIGTERM): cancel the migration cleanly. Second Ctrl-C: stop now."""

    def __init__(self, cancel: Callable[[], str | None], say: Callable[[str], None]) -> None:
        self.cancel = cancel
        self.say = say
        self.count = 0
        self._old: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.count > 1 and signum == signal.SIGINT:
            raise KeyboardInterrupt
        what = self.cancel()  # first: the line says what this interruption does
        self.say(f"interrupted: {what or 'stopping'} (Ctrl-C again to quit now)")

    def __enter__(self) -> _Interrupts:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


class _PauseSignals:
    """SIGUSR1 pauses before the next table or statement, SIGUSR2 resumes (as gh-ost's
    throttle/no-throttle)."""

    def __init__(
        self, pause: Callable[[], None], resume: Callable[[], None], say: Callable[[str], None]
    ) -> None:
        self.pause, self.resume, self.say = pause, resume, say
        self._old: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if signum == signal.SIGUSR1:
            self.pause()
            self.say("SIGUSR1: pausing before the next statement (SIGUSR2 resumes)")
        else:
            self.resume()
            self.say("SIGUSR2: resuming")

    def __enter__(self) -> _PauseSignals:
        for sig in (signal.SIGUSR1, signal.SIGUSR2):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def _confirm(plan: Any, server_label: str, yes: bool) -> None:
    if yes:
        return
    n = len(plan.runnable)
    if not click.confirm(
        f"Convert {n} table(s) to {plan.target.label} on {server_label}?", err=True
    ):
        raise InputError("not confirmed; nothing was changed")


@click.command(cls=ClientCommand, context_settings=CLIENT_CONTEXT)
@click.argument("table_names", metavar="TABLE...", nargs=-1)
@click.option(
    "--to",
    "target_text",
    required=True,
    metavar="TARGET",
    shell_complete=complete_targets,
    help=f"page:<codec>[:<level>] ({_MYSQL_CODECS}; MariaDB also {_MARIADB_ONLY}), "
    "row:<1|2|4|8|16> (ROW_FORMAT=COMPRESSED) or none.",
)
@click.option(
    "-B",
    "--databases",
    "as_databases",
    is_flag=True,
    help="The names are databases: every table of each (as mysqlcheck and mysqldump -B).",
)
@deprecated_option("--schema", "-B/--databases DATABASE", "schemas", multiple=True)
@click.option("--execute", is_flag=True, help="Run the statements (default: a dry run).")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--journal",
    type=click.Path(dir_okay=False),
    help="JSON-lines journal; an interrupted batch resumes from it.",
)
@click.option(
    "--max-running",
    type=click.IntRange(min=0),
    default=25,
    show_default=True,
    help="Wait before each table while Threads_running is at least this (0: never).",
)
@click.option(
    "--max-load",
    metavar="STATUS=N[,…]",
    help="Wait before each table and statement while a global status is at least N "
    "(e.g. Threads_running=25,Threads_connected=800; Threads_running also from --max-running).",
)
@click.option(
    "--critical-load",
    metavar="STATUS=N[,…]",
    help="Stop the batch cleanly, before the next table, once a global status reaches N.",
)
@click.option(
    "--pause-file",
    type=click.Path(dir_okay=False),
    help="While this file exists, wait before the next table or statement. "
    "SIGUSR1 pauses the same way, SIGUSR2 resumes.",
)
@click.option(
    "--max-lag",
    type=click.FloatRange(min=0),
    help="Wait before each table and statement while a replica is more seconds behind (or its "
    "lag is unknown: SQL thread stopped). Replicas: --replica, else SHOW SLAVE HOSTS.",
)
@click.option(
    "--replica",
    "replicas",
    multiple=True,
    metavar="HOST[:PORT]|SOCKET",
    help="A replica to watch for --max-lag (repeatable); same user and password.",
)
@click.option("--pause", type=click.FloatRange(min=0), default=0, help="Seconds between tables.")
@click.option(
    "--algorithm",
    type=click.Choice(["inplace", "copy"]),
    default="inplace",
    show_default=True,
    help="copy blocks writes (LOCK=SHARED); needed for FULLTEXT tables.",
)
@click.option(
    "--progress-source",
    type=click.Choice(["auto", "performance_schema", "processlist", "file"]),
    default="auto",
    show_default=True,
    help="Where progress is read.",
)
@click.option(
    "--flush-for-export",
    is_flag=True,
    help="Exact figures: FLUSH TABLES … FOR EXPORT before predicting and after converting. "
    "Blocks every write to the table while the server writes its dirty pages.",
)
@click.option(
    "--flush-wait",
    type=click.FloatRange(min=0),
    default=300,
    show_default=True,
    help="Without --flush-for-export: each converted table is verified once the server has "
    "written its pages, while the batch goes on; after the last conversion, wait at most this "
    "many seconds for the rest (no lock).",
)
@click.option(
    "--no-nudge",
    is_flag=True,
    help="Change no page-cleaner setting while converted tables wait for their pages to be "
    "written (by default, server-wide, no lock, put back after: innodb_max_dirty_pages_pct_lwm "
    "lowered; on MariaDB also innodb_io_capacity raised to innodb_io_capacity_max and "
    "innodb_adaptive_flushing OFF).",
)
@click.option(
    "--verify",
    "verify_only",
    is_flag=True,
    help="Convert nothing: verify that the tables' pages on disk are in the target format, "
    "waiting (no lock) for the server to write them; with --journal and no TABLE, the tables "
    "the journal's runs left unverified.",
)
@click.option("--no-flush", is_flag=True, hidden=True, help="The default now (no FLUSH).")
@click.option("--no-predict", is_flag=True, help="Skip the simulator's prediction.")
@click.option("--force", is_flag=True, help="Rebuild even tables already in the target format.")
@click.option("--keep-going", is_flag=True, help="Go on with the next table after a failure.")
@click.option(
    "--lock-wait-timeout",
    type=click.IntRange(min=1),
    default=60,
    show_default=True,
    help="Seconds a statement waits for the table's metadata lock.",
)
@click.option(
    "--slow-drop",
    "slow_drop_seconds",
    type=click.FloatRange(min=0),
    default=60,
    show_default=True,
    metavar="SECONDS",
    help="Warn when the rebuild's unlink of the old file, or a later DROP of the new one, is "
    "predicted to take longer (docs/cost.md).",
)
@click.option(
    "--compare/--no-compare",
    default=True,
    show_default=True,
    help="Predict zlib, lz4 and ROW_FORMAT=COMPRESSED 8K beside the target: bytes saved, CPU "
    "per page, extents and DROP time after, side by side.",
)
@click.option(
    "--probe",
    "with_probe",
    is_flag=True,
    help="Run the read-only workload probe (as `server probe`) on each table before the "
    "rebuild, and with --execute again after it: latencies before, after and their change.",
)
@probe_options("probe-")
@click.option("--json", "as_json", is_flag=True, help="Plan as JSON; with --execute, JSON lines.")
@connection_options
def migrate(
    table_names: tuple[str, ...],
    target_text: str,
    as_databases: bool,
    schemas: tuple[str, ...],
    execute: bool,
    yes: bool,
    journal: str | None,
    max_running: int,
    max_load: str | None,
    critical_load: str | None,
    pause_file: str | None,
    max_lag: float | None,
    replicas: tuple[str, ...],
    pause: float,
    algorithm: str,
    progress_source: str,
    flush_for_export: bool,
    flush_wait: float,
    no_nudge: bool,
    verify_only: bool,
    no_flush: bool,
    no_predict: bool,
    force: bool,
    keep_going: bool,
    lock_wait_timeout: int,
    slow_drop_seconds: float,
    compare: bool,
    with_probe: bool,
    as_json: bool,
    **kw: Any,
) -> None:
    """Convert tables to a compression format on a live server (dry run by default).

    Prints the exact statements for this server, the preflight checks and the predicted
    saving; with --execute runs them one table at a time with progress, then measures and
    verifies the pages on disk. Ctrl-C kills the running statement and reports the table.
    """
    from ibdtool.server import (
        ExecSettings,
        Journal,
        Pacing,
        PlanSettings,
        build_plan,
        list_tables,
        parse_load,
        parse_target,
        source_unavailable_reason,
        split_table_name,
    )

    target = parse_target(target_text)
    probing = probe_settings(kw) if with_probe else None
    if not with_probe:
        for key in ("points", "ranges", "range_rows", "rate", "share", "probe_max_load", "seed"):
            kw.pop(key, None)
    if as_databases:
        table_names, schemas = (), (*schemas, *table_names)
    if verify_only and not table_names and not schemas and journal is not None:
        table_names = tuple(sorted(Journal(journal).state(target.label).unverified))
        if not table_names:
            click.echo(f"ibdtool: {journal}: no table left unverified for {target.label}", err=True)
            sys.exit(ExitCode.OK)
    if not table_names and not schemas:
        raise click.UsageError("name at least one TABLE, or DATABASE with -B/--databases")
    if verify_only and execute:
        raise click.UsageError("--verify converts nothing: it does not go with --execute")
    if execute and not yes and not sys.stdin.isatty():
        raise InputError(
            "--execute without --yes needs a terminal to confirm on; add --yes to run unattended"
        )
    pacing = Pacing(
        max_load=parse_load(max_load, "--max-load"),
        critical_load=parse_load(critical_load, "--critical-load"),
        pause_file=Path(pause_file) if pause_file else None,
    )
    if flush_for_export and no_flush:
        raise click.UsageError("--flush-for-export and --no-flush contradict each other")
    database = kw.get("database")
    pairs = [split_table_name(t, database) for t in table_names]
    with _open_server(kw) as srv:
        reason = (
            None if progress_source == "auto" else source_unavailable_reason(srv, progress_source)
        )
        if reason:
            raise InputError(f"--progress-source {progress_source}: {reason}")
        found: list[Any] = []
        if pairs:
            found += list_tables(srv, tables=pairs)[0]
            missing = {f"{s}.{t}" for s, t in pairs} - {t.name for t in found}
            if missing:
                raise InputError(f"no such table: {', '.join(sorted(missing))}")
        if schemas:
            for schema in schemas:
                in_schema = list_tables(srv, schemas=[schema])[0]
                if not in_schema:
                    raise InputError(f"schema {schema}: no tables (or no such schema)")
                found += [t for t in in_schema if t.name not in {f.name for f in found}]
        settings = PlanSettings(
            algorithm=algorithm,
            force=force,
            predict=not no_predict,
            lock_wait_timeout=lock_wait_timeout,
            flush_for_export=flush_for_export,
            slow_drop_seconds=slow_drop_seconds,
            compare=compare,
        )
        if max_lag is not None:
            from ibdtool.server import resolve_replicas

            pacing.max_lag = max_lag
            pacing.replicas = resolve_replicas(srv.session, srv.flavor, srv.opts, list(replicas))
        elif replicas:
            raise click.UsageError("--replica is for --max-lag")
        if verify_only:
            settings.predict = False
        plan = build_plan(srv, found, target, settings)
        if probing is not None and not verify_only:
            _probe_plan(srv, plan, probing, "before", as_json)
        if verify_only:
            exec_settings = ExecSettings(
                flush_wait=flush_wait, nudge=not no_nudge, progress=progress_source
            )
            sys.exit(_run(srv, plan, journal, as_json, exec_settings, verify_only=True))
        if not execute:
            if as_json:
                _emit_json(plan.to_json())
            else:
                from ibdtool.cli.server_display import print_plan

                print_plan(plan, executing=False)
            sys.exit(ExitCode.FOUND if plan.refused else ExitCode.OK)
        if not as_json:
            from ibdtool.cli.server_display import print_plan

            print_plan(plan, executing=True)
        if not plan.runnable:
            why = "refused" if plan.refused else "already in the target format"
            click.echo(f"ibdtool: nothing to run: every table is {why}", err=True)
            if journal is None:
                sys.exit(ExitCode.FOUND if plan.refused else ExitCode.OK)
            # still open the journal: it may hold settings a crashed run left changed
        else:
            _confirm(plan, f"{srv.flavor.label} ({srv.opts.describe()})", yes)
        exec_settings = ExecSettings(
            max_running=max_running or None,
            pacing=pacing,
            pause=pause,
            flush_for_export=flush_for_export,
            flush_wait=flush_wait,
            nudge=not no_nudge,
            progress=progress_source,
            stop_on_error=not keep_going,
        )
        code = _run(srv, plan, journal, as_json, exec_settings, probing=probing)
    sys.exit(code)


class _Converted:
    """The plan's tables that were converted (what :func:`_probe_plan` probes after)."""

    def __init__(self, plan: Any, names: set[str]) -> None:
        self.runnable = [tp for tp in plan.runnable if tp.table.name in names]


def _print_probes(plan: Any, as_json: bool) -> None:
    """Each table's probes before and after, side by side, with the bytes saved."""
    from ibdtool.server import latency_change

    for tp in plan.runnable:
        if as_json:
            doc = {
                "event": "probe",
                "table": tp.table.name,
                "before": tp.probe.to_json() if tp.probe else None,
                "after": tp.probe_after.to_json() if tp.probe_after else None,
                "latency_change": latency_change(tp.probe, tp.probe_after)
                if tp.probe and tp.probe_after
                else None,
                "note": tp.probe_note,
            }
            sys.stdout.write(json.dumps(doc, default=str) + "\n")
            continue
        from ibdtool.cli.server_display import print_probe

        done = [p for p in (tp.probe, tp.probe_after) if p is not None]
        if done:
            print_probe(done)
        if tp.probe_note:
            click.echo(f"ibdtool: {shown(tp.table.name)}: {tp.probe_note}", err=True)


def _probe_plan(srv: Any, plan: Any, settings: Any, when: str, as_json: bool) -> None:
    """The workload probe on each table the plan converts (``before``), or has converted
    (``after``); a table the probe cannot read by key gets a note, not an error."""
    from ibdtool.errors import IbdtoolError
    from ibdtool.server import probe_table

    for tp in plan.runnable:
        t = tp.table
        if not as_json:
            click.echo(f"ibdtool: probing {shown(t.name)} ({when})…", err=True)
        try:
            result = probe_table(srv, t.schema, t.table, settings, when=when)
        except IbdtoolError as exc:
            tp.probe_note = f"no probe: {exc.message}"
            continue
        if when == "before":
            tp.probe = result
        else:
            tp.probe_after = result


def _run(
    srv: Any,
    plan: Any,
    journal_path: str | None,
    as_json: bool,
    settings: Any,
    verify_only: bool = False,
    probing: Any = None,
) -> int:
    from ibdtool.cli.server_display import ProgressView, print_results
    from ibdtool.server import Journal, Migration

    migration = Migration(srv, plan, settings, Journal(journal_path) if journal_path else None)
    tty = sys.stderr.isatty() and not as_json
    with (
        ProgressView(tty) as view,
        _Interrupts(migration.cancel, view.say),
        _PauseSignals(migration.pause, migration.resume, view.say),
    ):
        for ev in migration.verify_events() if verify_only else migration.events():
            if as_json:
                sys.stdout.write(json.dumps(ev.to_json(), default=str) + "\n")
                sys.stdout.flush()
            else:
                view.show(ev)
    if not as_json:
        print_results(migration.results)
    if probing is not None and not migration.interrupted:
        converted = {r.table for r in migration.results if r.status in ("done", "awaiting_flush")}
        for tp in plan.runnable:
            if tp.table.name not in converted:
                tp.probe_note = "no probe after: the table was not converted"
        _probe_plan(srv, _Converted(plan, converted), probing, "after", as_json)
        _print_probes(plan, as_json)
    if migration.interrupted:
        return int(ExitCode.INTERRUPTED)
    if verify_only:  # a proof or not: anything not verified is a finding
        return int(
            ExitCode.OK if all(r.verified is True for r in migration.results) else ExitCode.FOUND
        )
    bad = [r for r in migration.results if r.status in ("failed", "refused", "stopped")]
    # a conversion whose pages could not be read back is not a success either (status
    # awaiting_flush, pages not on disk yet and no flush asked for, is: it is said, not an
    # error)
    unverified = [r for r in migration.results if r.status == "done" and r.verified is not True]
    return int(ExitCode.FOUND if bad or unverified else ExitCode.OK)
