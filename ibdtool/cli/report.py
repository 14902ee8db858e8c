"""``ibdtool report``: one answer per data directory, for people, cron and CI.

Wires :mod:`ibdtool.report.batch` (discovery, parallel scan, totals, compare) to the terminal and to
the writers of :mod:`ibdtool.cli.report_formats`. Rows stream out as files finish with
``--format jsonl``; every other format is one document written when the scan is done. Exit
status: 0 clean, 1 when a ``--fail-on`` condition was found, 2 on bad input (including files
that could not be read: they are still reported, as rows with an ``error``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from ibdtool.cli.complete import TablespacePath
from ibdtool.cli.report_output import (
    RowSink,
    cores,
    finish,
    report_meta,
    report_progress,
    write_document,
)
from ibdtool.cli.schema_option import schema_options
from ibdtool.cli.ssh_option import ssh_options
from ibdtool.errors import InputError
from ibdtool.report import (
    COSTLY_SAVING_PCT,
    DEFAULT_SAMPLE,
    FLAGS,
    FRAGMENTED_EXTENTS_PER_GIB,
    FRAGMENTED_MIN_EXTENTS,
    SLOW_DROP_SECONDS,
    Comparer,
    Scanner,
    ScanOptions,
    Target,
    discover,
    load_report,
    tie_fulltext,
)

if TYPE_CHECKING:
    from ibdtool.tablespace import Schemas

FORMATS = ("table", "json", "jsonl", "csv", "markdown", "html", "openmetrics")


def _fail_on(values: tuple[str, ...]) -> list[str]:
    names: list[str] = []
    for value in values:
        for item in value.split(","):
            item = item.strip().lower().replace("-", "_")
            if not item:
                continue
            if item == "any":
                names.extend(FLAGS)
            elif item in FLAGS:
                names.append(item)
            else:
                raise click.BadParameter(
                    f"unknown condition {item!r}; valid: {', '.join(FLAGS)}, any",
                    param_hint="--fail-on",
                )
    return list(dict.fromkeys(names))


@click.command()
@click.argument("paths", nargs=-1, required=True, type=TablespacePath(readable=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="table: Rich tables; json: one document; jsonl: a row per line as files finish; "
    "csv; markdown; html: a self-contained page with sortable tables and a chart; "
    "openmetrics: gauges for Prometheus (node_exporter's textfile collector).",
)
@click.option(
    "--simulate",
    is_flag=True,
    help="Add the predicted size under the best page compression for this filesystem.",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=DEFAULT_SAMPLE,
    show_default=True,
    help="Pages sampled per file by --simulate (smaller files are simulated whole).",
)
@click.option(
    "--compare",
    "compare_path",
    type=click.Path(dir_okay=False),
    help="An earlier report (--format json or jsonl): what was added, dropped or changed.",
)
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default: all cores)."
)
@click.option(
    "--fail-on",
    "fail_on_opt",
    multiple=True,
    metavar="FLAGS",
    help=f"Exit 1 when any tablespace has one of these flags: {', '.join(FLAGS)}, or any.",
)
@click.option(
    "--fragmented",
    "fragmented_per_gib",
    type=click.IntRange(min=1),
    default=FRAGMENTED_EXTENTS_PER_GIB,
    show_default=True,
    metavar="EXTENTS_PER_GIB",
    help=f"Flag files with more extents per GiB than this (and at least "
    f"{FRAGMENTED_MIN_EXTENTS:,} extents) as fragmented.",
)
@click.option(
    "--slow-drop",
    "slow_drop_seconds",
    type=click.FloatRange(min=0),
    default=SLOW_DROP_SECONDS,
    show_default=True,
    metavar="SECONDS",
    help="Flag files whose predicted DROP TABLE (freeing their extents) takes longer than "
    "this as slow_drop (see docs/cost.md; `ibdtool calibrate` makes the prediction this "
    "filesystem's own).",
)
@click.option(
    "--costly-saving",
    "costly_saving_pct",
    type=click.FloatRange(0, 100),
    default=COSTLY_SAVING_PCT,
    show_default=True,
    metavar="PCT",
    help=f"Flag compressed files with at least {FRAGMENTED_MIN_EXTENTS:,} extents that save "
    "less than PCT percent as costly_saving (many extents for little space).",
)
@click.option("--wide", is_flag=True, help="Table: every column, however wide the terminal.")
@click.option(
    "--map",
    "page_map",
    is_flag=True,
    help="Add each file's page-type map (up to 512 pages read per file): a 'map' per row, "
    "drawn in the HTML page.",
)
@ssh_options("host:path: ")
@schema_options
def report(
    paths: tuple[str, ...],
    fmt: str,
    wide: bool,
    page_map: bool,
    simulate: bool,
    sample: int,
    compare_path: str | None,
    jobs: int | None,
    fail_on_opt: tuple[str, ...],
    fragmented_per_gib: int,
    slow_drop_seconds: float,
    costly_saving_pct: float,
    rsh: str | None,
    ssh_option: tuple[str, ...],
    remote_python: str | None,
    schemas: Schemas | None,
) -> None:
    """Report every tablespace under data directories (or the files given).

    PATH is a data directory (every *.ibd, ibdata*, undo*, *.ibu and mysql.ibd under it;
    the schema is the folder a file is in) or a file. Files are scanned in parallel; one row
    per tablespace, totals per schema and overall.

    PATH may be [user@]host:path, as with scp: each host is read over the system ssh by a
    small python3 program sent down the connection (nothing installed there), hosts in
    parallel, the pages decoded here; rows carry their host, totals are per host and for the
    fleet, and a host that fails is one error row.

    Exit status: 0 clean, 1 when a --fail-on flag was found, 2 on bad input or when a file
    could not be read (it is still reported, as a row with an error).
    """
    from ibdtool.cli import report_formats as rf

    fail_on = _fail_on(fail_on_opt)
    opts = ScanOptions(
        simulate=simulate,
        sample=sample,
        fragmented_per_gib=fragmented_per_gib,
        slow_drop_seconds=slow_drop_seconds,
        costly_saving_pct=costly_saving_pct,
        page_map=page_map,
        schemas=schemas,
    )
    groups = None
    if any(":" in p for p in paths):  # host:path (only then the ssh machinery is imported)
        from ibdtool.report import parse_hosts

        groups = parse_hosts(paths)
    if groups is not None:
        from ibdtool.cli.report_fleet import report_fleet
        from ibdtool.copy import SshConfig

        cfg = SshConfig.from_cli(rsh, ssh_option, remote_python)
        report_fleet(groups, cfg, opts, fmt, wide, compare_path, jobs, fail_on)
        return
    targets = discover(paths)
    if not targets:
        raise InputError(f"{', '.join(paths)}: no tablespaces found")
    # match keys (:func:`match_keys`): names, or paths when names repeat; a flag, not a
    # dict of 100,000 keys
    names = {t.name for t in targets}
    by_path = len(names) != len(targets)
    del names
    comparer = None
    if compare_path is not None:
        keys = (t.path if by_path else t.name for t in targets)
        comparer = Comparer(load_report(compare_path), compare_path, keys)
    jobs = jobs or cores()
    meta = report_meta(paths, opts, jobs, fail_on)
    out = RowSink(fmt, comparer, table_columns=rf.row_columns_for(opts.simulate, False))
    done_files = done_bytes = 0
    # only the FULLTEXT tablespaces' targets are needed after the scan (tie_fulltext): the
    # others' memory (~400 B a file) is free for the writers
    fulltext = [t for t in targets if t.fts_table_id is not None]
    with (
        Scanner(targets, opts, jobs) as scanner,
        report_progress(len(targets), sum(t.size for t in targets)) as bar,
    ):
        if bar:
            show = bar

            def inside(target: Target, fraction: float) -> None:
                # a big file moves the bar by its pages, not only when it is done
                info = f"{os.path.basename(target.path)} {100 * fraction:.0f}%"
                show(done_files, done_bytes + int(fraction * target.size), info)

            scanner.on_progress = inside
        for size, row in scanner:
            out.add(row, row["path"] if by_path else row["name"], row.get("error"))
            done_files += 1
            done_bytes += size
            if bar:
                bar(done_files, done_bytes, "")
    del targets, scanner
    dropped = comparer.dropped() if comparer else []
    if out.stream:
        for c in dropped:
            base = {k: c[k] for k in ("path", "name", "schema", "table")}
            rf.write_jsonl_row({**base, "change": c}, sys.stdout)
    else:
        tie_fulltext(out.rows, fulltext)
        write_document(out, meta, dropped, wide)
    finish(out.totals, out.errors, fail_on)
