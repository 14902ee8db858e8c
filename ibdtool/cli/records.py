"""``ibdtool records PATH``: an index's user records, decoded by column (JSON lines or a table).

The work lives in :mod:`ibdtool.tablespace.records`; this module parses options, opens the live
server when connection options are given, and prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ibdtool.cli.keyring_option import keyring_options
from ibdtool.cli.server import connection_options, resolve_connection
from ibdtool.errors import ExitCode, InputError
from parsers.keyring import Keyring

_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


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


def _server_sql(kw: dict[str, Any]) -> Any:
    """A ``(schema, table) -> CREATE TABLE`` reader on the live server, or None without options."""
    wanted = any(
        kw.get(k) for k in ("host", "port", "socket", "user", "defaults_file", "ask_password")
    )
    if not wanted:
        for k in list(kw):
            kw.pop(k)
        return None
    opts, _ = resolve_connection(kw)

    def read(schema: str, table: str) -> str | None:
        from ibdtool.server import session

        with session(opts) as s:
            row = s.query_one(
                f"/* ibdtool */ SHOW CREATE TABLE `{schema.replace('`', '``')}`."
                f"`{table.replace('`', '``')}`"
            )
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
    "--max-extern",
    default="1M",
    show_default=True,
    help="Bytes of an externally stored value to show (more is marked truncated).",
)
@keyring_options
@connection_options
def records(
    path: str,
    index_name: str | None,
    schema_sql: str | None,
    as_json: bool,
    max_extern: str,
    keyring: Keyring | None,
    **kw: Any,
) -> None:
    """The user records of an index, in key order, decoded by column.

    Columns come from the SDI (MySQL 8), else --schema, else the live server (when connection
    options are given), else the .cfg file beside PATH; without any, records are shown in hex.
    An encrypted tablespace is read with --keyring.
    """
    from ibdtool.tablespace import load_schemas, open_records

    limit = _size(max_extern)
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
    )
    problems = 0
    try:
        if not as_json and run.table is not None:
            note = "; ".join(run.table.notes)
            click.echo(
                f"# {path}: index {run.index_name}, columns from {run.table.source}"
                + (f" ({note})" if note else ""),
                err=True,
            )
        elif not as_json:
            click.echo(f"# {path}: no table definition: records in hex", err=True)
        out = sys.stdout
        for ev in run.events():
            if ev.problem is not None:
                problems += 1
                click.echo(f"ibdtool: warning: {path}: page {ev.page}: {ev.problem}", err=True)
                if not as_json:
                    continue
            if as_json:
                out.write(json.dumps(ev.to_json(), ensure_ascii=False, default=str) + "\n")
            else:
                flag = " deleted" if ev.deleted else ""
                vals = " ".join(
                    f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in (ev.fields or {}).items()
                )
                out.write(f"[{ev.page}]{flag} {vals}\n")
    finally:
        run.ts.close()
    if problems:
        sys.exit(ExitCode.FOUND)
