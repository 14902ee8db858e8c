"""``ibdtool records PATH``: an index's user records, decoded by column (JSON lines or a table).

The work lives in :mod:`ibdtool.tablespace.records`; this module parses options, opens the live
server when connection options (or the user's option files) name one, and prints.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

import click

from ibdtool.cli.keyring_option import keyring_options
from ibdtool.cli.server import CONNECTION_KEYS, connection_options, resolve_connection
from ibdtool.errors import ExitCode, InputError
from ibdtool.parsers.keyring import Keyring

_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
EXPORT_EXTERN_LIMIT = 1 << 32  # LONGBLOB's maximum: exports read values whole


def _size(text: str) -> int:
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    unit = t[-1:] if t[-1:] in _SIZE_UNITS else ""
    try:
        n = int(t[: len(t) - len(unit)])
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a size like 4096, 64K or 1M") from None
    if n < 0:
        raise click.BadParameter("must not be negative")
    return n * _SIZE_UNITS[unit]


#: connection options that ask for the live server when given on the command line
_CONNECTING = (
    *(k for k in CONNECTION_KEYS if not k.endswith("_timeout")),
    "defaults_file",
    "defaults_extra_file",
    "login_path",
    "ask_password",
)


def _user_names_a_server() -> bool:
    """Does the user's own configuration name a server: ``MYSQL_HOST``, ``MYSQL_UNIX_PORT``,
    ``MYSQL_TCP_PORT``, or a host, socket, port, user or password in ``~/.my.cnf`` or
    ``~/.mylogin.cnf``? The machine-wide files (``/etc/mysql/…``, which on most
    distributions set the socket for every client) are not asked to mean "use the server"."""
    import os

    if any(os.environ.get(v) for v in ("MYSQL_HOST", "MYSQL_UNIX_PORT", "MYSQL_TCP_PORT")):
        return True
    home = os.environ.get("HOME")
    user_file = Path(home, ".my.cnf") if home else None
    from ibdtool.server import resolve_options

    if user_file is not None and user_file.is_file():
        opts = resolve_options({}, defaults_file=str(user_file), environ={"HOME": home or ""})
    else:  # ~/.mylogin.cnf alone
        opts = resolve_options({}, no_defaults=True, environ={"HOME": home or ""})
    return bool(
        opts.socket
        or opts.user
        or opts.password is not None
        or opts.port
        or opts.host not in (None, "localhost")
    )


def _server_sql(kw: dict[str, Any]) -> Any:
    """A ``(schema, table) -> CREATE TABLE`` reader on the live server, or None.

    The server is asked when connection options are given, or when the user's own option
    files (``~/.my.cnf``, ``~/.mylogin.cnf``) or ``MYSQL_*`` name one
    (:func:`_user_names_a_server`); the connection then reads every option file as ``mysql``
    does. A server only those files named that cannot be reached is one warning, and the
    definition comes from the next source (the ``.cfg``).
    """
    ctx = click.get_current_context(silent=True)
    pw = ctx.meta.get("ibdtool.password") if ctx is not None else None
    asked = any(kw.get(k) for k in _CONNECTING) or getattr(pw, "value", None) is not None
    if not asked and (kw.get("no_defaults") or not _user_names_a_server()):
        for k in list(kw):
            kw.pop(k)
        return None
    opts, _ = resolve_connection(kw)

    def read(schema: str, table: str) -> str | None:
        from ibdtool.errors import IbdtoolError
        from ibdtool.server import session

        try:
            with session(opts) as s:
                row = s.query_one(
                    f"/* ibdtool */ SHOW CREATE TABLE `{schema.replace('`', '``')}`."
                    f"`{table.replace('`', '``')}`"
                )
        except IbdtoolError as exc:
            if asked:
                raise
            click.echo(
                f"ibdtool: [Warning] the server of the option files: {exc.message}; "
                "the definition comes from the next source",
                err=True,
            )
            return None
        if not row:
            return None
        return str(row.get("Create Table") or list(row.values())[1])

    return read


@click.command()
@click.argument("path", type=click.Path(readable=False))
@click.option("--index", "index_name", help="Index name (default: the clustered index).")
@click.option(
    "--schema",
    "schema_sql",
    metavar="SQL|@FILE",
    help="CREATE TABLE statement of the table (@FILE: a file, such as a mysqldump --no-data "
    "one, whose statement for this table is taken by name).",
)
@click.option("--json", "as_json", is_flag=True, help="JSON lines, one object per record.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "csv", "tsv", "sql"]),
    default="text",
    show_default=True,
    help="text: a line per record; json: JSON lines; csv/tsv: rows for LOAD DATA (the "
    "statement is printed on stderr); sql: INSERT statements. csv, tsv and sql leave "
    "delete-marked records out and read long values whole.",
)
@click.option(
    "--max-extern",
    default=None,
    help="Bytes of an externally stored value to show (more is marked truncated) "
    "[default: 1M; whole values for csv, tsv and sql].",
)
@click.option(
    "--force",
    is_flag=True,
    help="Go on past records that do not fit the table definition, marking them "
    "(default: stop at the first one, exit 2).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Processes (default: all cores).",
)
@keyring_options
@connection_options
def records(
    path: str,
    index_name: str | None,
    schema_sql: str | None,
    as_json: bool,
    fmt: str,
    max_extern: str | None,
    force: bool,
    jobs: int | None,
    keyring: Keyring | None,
    **kw: Any,
) -> None:
    """The user records of an index, in key order, decoded by column.

    Columns come from the SDI (MySQL 8), else --schema, else the live server (connection
    options, or ~/.my.cnf or MYSQL_HOST naming one), else the .cfg file beside PATH; without
    any, records are shown in hex. An encrypted tablespace is read with --keyring (a MySQL
    table's .cfp beside PATH is used without it).
    """
    from ibdtool.present import shown
    from ibdtool.tablespace import EXPORT_FORMATS, load_schemas, open_records

    if as_json:
        fmt = "json"
    as_json = fmt == "json"
    export = fmt in EXPORT_FORMATS
    limit = _size(max_extern) if max_extern else (EXPORT_EXTERN_LIMIT if export else 1 << 20)
    schema = None
    schemas = load_schemas(schema_sql)
    if schemas is not None:
        schema = schemas.for_file(path, single=True)
        if schema is None:
            names = ", ".join(t.name for t in schemas.tables)
            raise InputError(f"--schema has no CREATE TABLE for {Path(path).stem} (only {names})")
    server_sql = _server_sql(kw)
    run = open_records(
        path,
        index=index_name,
        schema=schema,
        server_sql=server_sql,
        extern_limit=limit,
        keyring=keyring,
        force=force,
    )
    problems = 0
    try:
        if export:
            problems = _export(run, path, fmt, force, jobs)
        elif not as_json and run.table is not None:
            note = "; ".join(run.table.notes)
            click.echo(
                shown(
                    f"# {path}: index {run.index_name}, columns from {run.table.source}"
                    + (f" ({note})" if note else "")
                ),
                err=True,
            )
        elif not as_json:
            click.echo(f"# {shown(path)}: no table definition: records in hex", err=True)
        if not export:
            problems = _print(run, path, as_json, force, jobs)
    finally:
        run.ts.close()
    if problems:
        sys.exit(ExitCode.FOUND)


def _text_line(ev: Any) -> str:
    """One record of ``records``' text output (with its newline)."""
    from ibdtool.present import json_shown, shown

    flag = (" deleted" if ev.deleted else "") + (" MISFIT" if ev.misfit else "")
    vals = " ".join(
        f"{shown(k)}={json_shown(json.dumps(v, ensure_ascii=False, default=str))}"
        for k, v in (ev.fields or {}).items()
    )
    return f"[{ev.page}]{flag} {vals}\n"


_LINE_MAKERS: dict[tuple[tuple[str, ...], str], Any] = {}


def _json_value(v: Any) -> str:
    from ibdtool.present import json_shown

    return json_shown(json.dumps(v, ensure_ascii=False, default=str))


def _line_maker(names: tuple[str, ...], styles: str) -> Any:
    """A function ``(head, rows) -> lines or None`` for one plan's pages: the text lines
    written by straight-line code made once (None: a string needs escaping, the page goes
    through :func:`_text_line`'s general path)."""
    from ibdtool.present import shown

    key = (names, styles)
    if key in _LINE_MAKERS:
        return _LINE_MAKERS[key]
    vs = [f"v{i}" for i in range(len(names))]
    pieces, strs = [], []
    for i, (name, style) in enumerate(zip(names, styles, strict=True)):
        label = " " + shown(name) + "="
        v = vs[i]
        if style == "s":
            strs.append(f"{{{v} or ''}}")
            value = f"{label + chr(34)!r} + {v} + '\"'"
        elif style == "i":
            value = f"{label!r} + str({v})"
        else:
            value = f"{label!r} + _json({v})"
        pieces.append(f"({label + 'null'!r} if {v} is None else {value})")
    unpack = "(" + "".join(v + ", " for v in vs) + ")"
    src = (
        "def lines(head, rows):\n"
        f"    chk = ''.join([f\"{''.join(strs)}\" for d, {unpack} in rows])\n"
        "    if not chk.isprintable() or '\"' in chk or '\\\\' in chk:\n"
        "        return None\n"
        "    deleted = head + ' deleted'\n"
        f"    return [(deleted if d else head) + {' + '.join(pieces)} + '\\n'\n"
        f"            for d, {unpack} in rows]\n"
    )
    ns: dict[str, Any] = {"_json": _json_value}
    exec(compile(src, "<records-text>", "exec"), ns)  # our own generated code
    _LINE_MAKERS[key] = ns["lines"]
    return ns["lines"]


def _text_block(items: list[Any]) -> bytes:
    """The text lines of a run of pages: :class:`FastRows` pages and clean events."""
    from ibdtool.tablespace import FastRows

    out: list[str] = []
    for item in items:
        if not isinstance(item, FastRows):
            out.append(_text_line(item))
            continue
        head = f"[{item.page}]"
        made = _line_maker(item.names, item.styles)(head, item.rows)
        if made is not None:
            out.extend(made)
            continue
        names = list(item.names)
        for deleted, values in item.rows:
            fields = dict(zip(names, values, strict=True))
            out.append(_text_line(_Shown(item.page, deleted, fields)))
    return "".join(out).encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict")


class _Shown:
    """What :func:`_text_line` reads of a record."""

    __slots__ = ("deleted", "fields", "misfit", "page")

    def __init__(self, page: int, deleted: bool, fields: dict[str, Any]) -> None:
        self.page, self.deleted, self.fields, self.misfit = page, deleted, fields, None


def _json_line(ev: Any) -> str:
    from ibdtool.present import json_shown

    return json_shown(json.dumps(ev.to_json(), ensure_ascii=False, default=str)) + "\n"


def _json_block(index: str, items: list[Any]) -> bytes:
    """The JSON lines of a run of pages (:meth:`RecordEvent.to_json` of each record)."""
    from ibdtool.present import json_shown
    from ibdtool.tablespace import FastRows

    out: list[str] = []
    for item in items:
        if not isinstance(item, FastRows):
            out.append(_json_line(item))
            continue
        names = item.names
        for deleted, values in item.rows:
            doc = {"index": index, "page": item.page, "deleted": deleted,
                   "fields": dict(zip(names, values, strict=True))}  # fmt: skip
            out.append(json_shown(json.dumps(doc, ensure_ascii=False, default=str)))
            out.append("\n")
    return "".join(out).encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict")


def _print(run: Any, path: str, as_json: bool, force: bool, jobs: int | None) -> int:
    """Print the records of ``run`` as text or JSON lines; the problems met."""
    from ibdtool.present import shown
    from ibdtool.tablespace import Block, RecordEvent, read_blocks

    problems = 0
    out = sys.stdout
    fmt = partial(_json_block, run.index_name) if as_json else _text_block
    items: Any = read_blocks(run, fmt, _jobs(jobs))
    for ev in items:
        if isinstance(ev, Block):
            out.flush()
            out.buffer.write(ev.data)
            continue
        assert isinstance(ev, RecordEvent)
        if ev.misfit is not None:
            where = f"{path}: page {ev.page}, record at byte {ev.origin}"
            source = run.table.source if run.table is not None else "?"
            if not force:
                raise InputError(
                    f"{where}: the table definition (from {source}) does not fit the "
                    f"records: {ev.misfit} (--force reads on, marking such records)"
                )
            problems += 1
            click.echo(f"ibdtool: warning: {where}: does not fit: {ev.misfit}", err=True)
        if ev.problem is not None:
            problems += 1
            click.echo(
                f"ibdtool: warning: {shown(path)}: page {ev.page}: {shown(ev.problem)}",
                err=True,
            )
            if not as_json:
                continue
        if as_json:
            out.write(_json_line(ev))
        else:
            out.write(_text_line(ev))
    return problems


def _jobs(jobs: int | None) -> int:
    import os

    if jobs:
        return jobs
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover  (not Linux)
        return os.cpu_count() or 1


def _export(run: Any, path: str, fmt: str, force: bool, jobs: int | None) -> int:
    """Write the rows of ``run`` in an export format on stdout; the number of records left
    out because they could not be read (with --force)."""
    from ibdtool.parsers.tabledef import Kind
    from ibdtool.tablespace import export_header, load_data_sql

    if run.table is None or run.index is None:
        raise InputError(f"{path}: --format {fmt} needs a table definition (SDI, --schema, .cfg)")
    raw = [c.name for c in run.table.columns if c.kind is Kind.RAW]
    if raw:
        raise InputError(
            f"{path}: the definition (from {run.table.source}) does not say what "
            f"{', '.join(raw)} hold (a DECIMAL's scale is not in a .cfg file): give --schema, "
            "or keep the .frm file beside the .cfg"
        )
    table = run.table.name.replace("\\", "/").rsplit("/", 1)[-1]
    if run.index.clustered:
        columns = list(run.table.columns)
    else:
        columns = [f.column for f in run.index.fields if not f.column.hidden]
    note = "; ".join(run.table.notes)
    click.echo(
        f"# {path}: index {run.index_name}, columns from {run.table.source}"
        + (f" ({note})" if note else ""),
        err=True,
    )
    if fmt != "sql":
        click.echo(f"# load with: {load_data_sql(fmt, table, columns)}", err=True)
    skipped = 0
    from ibdtool.tablespace import (
        Block,
        FastRows,
        RecordEvent,
        page_writer,
        read_blocks,
        row_writer,
        sql_statements,
        tuple_writer,
    )

    names = [c.name for c in columns]
    write_row = tuple_writer(columns) if fmt == "sql" else row_writer(fmt, columns)
    write_page = page_writer(fmt, columns)

    def block(items: list[Any]) -> Any:
        """The rows of a run of clean pages: bytes (CSV, TSV), a list of tuples (SQL)."""
        made: list[bytes] = []
        for item in items:
            if isinstance(item, FastRows):
                if list(item.names) == names:
                    rows = [v for d, v in item.rows if not d]
                else:
                    pick = [item.names.index(n) for n in names]
                    rows = [tuple(v[i] for i in pick) for d, v in item.rows if not d]
                whole = write_page(rows) if write_page is not None else None
                if whole is None:
                    made.extend(write_row(list(v)) for v in rows)
                elif fmt == "sql":
                    made.extend(whole)
                else:
                    made.append(whole)
            elif not item.deleted:
                fields = item.fields or {}
                made.append(write_row([fields.get(n) for n in names]))
        return made if fmt == "sql" else b"".join(made)

    def blocks() -> Any:
        nonlocal skipped
        for ev in read_blocks(run, block, _jobs(jobs)):
            if isinstance(ev, Block):
                yield ev.data
                continue
            assert isinstance(ev, RecordEvent)
            where = f"{path}: page {ev.page}"
            if ev.misfit is not None and not force:
                raise InputError(
                    f"{where}, record at byte {ev.origin}: the table definition (from "
                    f"{run.table.source}) does not fit the records: {ev.misfit} (--force "
                    "reads on, leaving such records out)"
                )
            if ev.problem is not None or ev.misfit is not None or ev.errors:
                skipped += 1
                errors = ev.errors or {}
                why = ev.problem or ev.misfit or "; ".join(f"{k}: {v}" for k, v in errors.items())
                click.echo(f"ibdtool: warning: {where}: left out: {why}", err=True)
                continue
            if ev.deleted:
                continue
            if ev.truncated:
                raise InputError(
                    f"{where}: {', '.join(ev.truncated)} longer than --max-extern: raise it"
                )
            yield block([ev])

    out = sys.stdout.buffer
    out.write(export_header(fmt, columns))
    if fmt == "sql":
        for stmt in sql_statements(table, columns, blocks()):
            out.write(stmt)
    else:
        for data in blocks():
            out.write(data)
    out.flush()
    return skipped
