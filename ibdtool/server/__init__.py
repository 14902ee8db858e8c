"""The live-server side of ibdtool: look at a MariaDB/MySQL server and convert its tables.

The engine API the CLI (:mod:`ibdtool.cli.server`) and the TUI share::

    from ibdtool.server import Server, resolve_options, list_tables, parse_target, build_plan
    from ibdtool.server import Migration, ExecSettings

    server = Server(resolve_options({"socket": "/run/mysqld/mysqld.sock"}))
    found, _ = list_tables(server, tables=[("db", "t")])
    plan = build_plan(server, found, parse_target("page:lz4"))   # statements + preflight
    run = Migration(server, plan, ExecSettings())
    for event in run.events():       # a generator: progress, statements, results
        ...                          # run.cancel() from any thread sends KILL QUERY

Modules: ``clientopts`` (option files, login paths, precedence), ``loginfile``
(``~/.mylogin.cnf``), ``connection`` (options, sessions), ``sql`` (every statement),
``dialects`` (what differs per server line: one file each), ``context`` (:class:`Server`),
``localfs`` (the datadir from here), ``pagestate`` (pages by compression, verification),
``tables``, ``status``, ``steps`` (targets, settings, statements), ``plan``, ``preflight``,
``progress``, ``execute``, ``results``, ``journal``. The Rich output of these results is the CLI's
(:mod:`ibdtool.cli.server_display`).
"""

from __future__ import annotations

from ibdtool.server.clientopts import resolve_options
from ibdtool.server.connection import ConnectionOptions
from ibdtool.server.context import Server
from ibdtool.server.execute import ExecSettings, Migration
from ibdtool.server.plan import Plan, build_plan
from ibdtool.server.preflight import Check
from ibdtool.server.results import Event, TableResult
from ibdtool.server.status import server_status
from ibdtool.server.steps import PlanSettings, Target, parse_target
from ibdtool.server.table_info import TableInfo
from ibdtool.server.tables import list_tables

__all__ = [
    "Check",
    "ConnectionOptions",
    "Event",
    "ExecSettings",
    "Migration",
    "Plan",
    "PlanSettings",
    "Server",
    "TableInfo",
    "TableResult",
    "Target",
    "build_plan",
    "list_tables",
    "parse_target",
    "resolve_options",
    "server_status",
]
