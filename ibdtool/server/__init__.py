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
``table_info`` (a table and its tablespaces: the records), ``tables`` (reads them), ``status``,
``steps`` (targets, settings, statements), ``plan``, ``preflight``, ``progress``, ``execute``,
``results``, ``flushwatch`` (converted tables waiting for their pages to reach disk),
``probe`` (a bounded read-only workload probe of a table), ``journal``, ``pacing`` and
``replicas`` (``--max-load``, ``--max-lag``),
``argvscrub`` (passwords out of the process title). The Rich output of these results is the
CLI's (:mod:`ibdtool.cli.server_display`). Other groups, the CLI and the TUI import from this
package (its offer, below, loads each module when a name from it is first used).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ibdtool.server.argvscrub import scrub_quietly
    from ibdtool.server.clientopts import (
        PASSWORD_WARNING,
        PasswordArg,
        resolve_options,
        take_password_args,
    )
    from ibdtool.server.connection import ConnectionOptions, session
    from ibdtool.server.context import Server
    from ibdtool.server.execute import ExecSettings, Migration
    from ibdtool.server.journal import Journal
    from ibdtool.server.pacing import Pacing, parse_load
    from ibdtool.server.plan import Plan, TablePlan, build_plan
    from ibdtool.server.preflight import Check
    from ibdtool.server.probe import ProbeResult, ProbeSettings, latency_change, probe_table
    from ibdtool.server.progress import source_unavailable_reason
    from ibdtool.server.replicas import resolve_replicas
    from ibdtool.server.results import Event, TableResult
    from ibdtool.server.status import ServerStatus, server_status
    from ibdtool.server.steps import PlanSettings, Target, parse_target
    from ibdtool.server.table_info import SpaceInfo, TableInfo
    from ibdtool.server.tables import index_names, list_tables, space_kind, split_table_name
else:
    from ibdtool.exports import lazy

    __getattr__, __dir__ = lazy(
        __name__,
        {
            "argvscrub": "scrub_quietly",
            "clientopts": "PASSWORD_WARNING PasswordArg resolve_options take_password_args",
            "connection": "ConnectionOptions session",
            "context": "Server",
            "execute": "ExecSettings Migration",
            "journal": "Journal",
            "pacing": "Pacing parse_load",
            "probe": "ProbeResult ProbeSettings latency_change probe_table",
            "plan": "Plan TablePlan build_plan",
            "preflight": "Check",
            "progress": "source_unavailable_reason",
            "replicas": "resolve_replicas",
            "results": "Event TableResult",
            "status": "ServerStatus server_status",
            "steps": "PlanSettings Target parse_target",
            "table_info": "SpaceInfo TableInfo",
            "tables": "index_names list_tables space_kind split_table_name",
        },
    )
