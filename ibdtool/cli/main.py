"""The ``ibdtool`` command line: argument parsing, error handling and output, nothing else.

stdout carries data (tables, JSON, CSV); stderr carries talk (progress, warnings, the one-line
``ibdtool: error: …``). Exit codes come from :class:`ibdtool.errors.ExitCode`. Each command's
work lives in an engine module; this file only wires it to the terminal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TypeVar

import click

from ibdtool.cli.complete import TablespacePath, complete_algorithms, complete_block_sizes
from ibdtool.cli.keyring_option import keyring_options
from ibdtool.cli.schema_option import schema_options
from ibdtool.errors import ExitCode, IbdtoolError, InputError
from ibdtool.parsers import codecs
from ibdtool.present import shown

if TYPE_CHECKING:  # ibdtool.parsers.keyring loads construct and cryptography: only with --keyring
    from ibdtool.parsers.keyring import Keyring

if TYPE_CHECKING:
    from ibdtool.tablespace import Schemas

#: the page map's colourings (ibdtool.present.pagemap.MODES, kept here so start-up imports nothing)
MAP_MODES = ("type", "compression", "allocation", "index")

F = TypeVar("F", bound=Callable[..., Any])
#: file arguments: existence and readability are checked when the file is opened, so that each
#: problem is one ``ibdtool: error: <path>: …`` line, not a usage message
_PATH = TablespacePath(readable=False)


def _fail(message: str, code: int = ExitCode.BAD_INPUT) -> NoReturn:
    click.echo(f"ibdtool: error: {shown(message)}", err=True)
    sys.exit(code)


#: the commands whose ``-h`` is the server's host, as in the mysql clients
HOST_COMMANDS = frozenset({"server", "migrate", "records", "tui"})


def help_spellings(argv: list[str]) -> list[str]:
    """The mysql clients' help spellings on every command: ``-?`` is ``--help``. ``-h`` is the
    host where a command connects to a server (:data:`HOST_COMMANDS`); elsewhere it is still
    help, deprecated (one warning on stderr)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:]
        if arg == "-?":
            arg = "--help"
        elif arg == "-h" and command not in HOST_COMMANDS:
            from ibdtool.cli.deprecated import warn_deprecated

            warn_deprecated("-h for help", "--help or -? (-h is the host on server commands)")
            arg = "--help"
        out.append(arg)
    return out


class IbdtoolGroup(click.Group):
    """Turns every expected failure into one line on stderr and an exit code."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("standalone_mode", True)
        given = args[0] if args else kwargs.pop("args", None)  # click's main(args=…) too
        argv = list(given) if given is not None else sys.argv[1:]
        args = (help_spellings(argv), *args[1:])
        traceback = "--traceback" in argv
        try:
            return super().main(*args, **kwargs)
        except IbdtoolError as exc:
            if traceback:
                raise
            _fail(exc.message, exc.exit_code)
        except BrokenPipeError:
            _stop_on_broken_pipe()
        except KeyboardInterrupt:
            _stop_on_interrupt()
        except MemoryError:
            _fail("out of memory")
        except OSError as exc:
            if traceback:
                raise
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"{where}{exc.strerror or exc}")

    def invoke(self, ctx: click.Context) -> Any:
        # handled here, inside click's main, which would turn both into exit status 1
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _stop_on_broken_pipe()
        except KeyboardInterrupt:
            _stop_on_interrupt()

    # Commands that live in their own modules, imported only when run (keeps start-up fast,
    # and lets each feature own its CLI module): name -> ("module:attribute", the first
    # paragraph of its help, which `ibdtool --help` shows without importing the module; a
    # test keeps each in step with the command's own docstring).
    lazy_commands: ClassVar[dict[str, tuple[str, str]]] = {
        "server": (
            "ibdtool.cli.server:server",
            "Look at a live MariaDB/MySQL server: settings and tablespaces.",
        ),
        "migrate": (
            "ibdtool.cli.server:migrate",
            "Convert tables to a compression format on a live server (dry run by default).",
        ),
        "copy": (
            "ibdtool.cli.copy:copy",
            "Copy SRC... to DST keeping holes; either side may be [user@]host:path.",
        ),
        "report": (
            "ibdtool.cli.report:report",
            "Report every tablespace under data directories (or the files given).",
        ),
        "records": (
            "ibdtool.cli.records:records",
            "The user records of an index, in key order, decoded by column.",
        ),
        "tui": (
            "ibdtool.cli.tui:tui",
            "Browse a data directory, a tablespace's page map, a page's bytes; simulate; convert.",
        ),
        "calibrate": (
            "ibdtool.cli.cost:calibrate",
            "Measure what freeing an extent costs on DIRECTORY's filesystem.",
        ),
        "drop-prepare": (
            "ibdtool.cli.cost:drop_prepare",
            "Keep a table's file alive past its DROP, so that the DROP does not stall.",
        ),
        "free": (
            "ibdtool.cli.cost:free",
            "Free a dropped table's file in small paced steps, without a long stall.",
        ),
        "completion": (
            "ibdtool.cli.complete:completion",
            "Print the completion script for SHELL (bash, zsh or fish).",
        ),
        "man": (
            "ibdtool.cli.man:man",
            "Show the manual page, ibdtool(1): the reference of docs/ and every command's help.",
        ),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, cmd_name) or self._lazy(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing, with the lazy commands' help from the table above."""
        stubs = {n: click.Command(n, help=h) for n, (_t, h) in self.lazy_commands.items()}
        commands = [
            (n, cmd)
            for n in self.list_commands(ctx)
            if (cmd := self.commands.get(n) or stubs.get(n)) is not None and not cmd.hidden
        ]
        if commands:
            limit = formatter.width - 6 - max(len(n) for n, _c in commands)
            with formatter.section("Commands"):
                formatter.write_dl([(n, cmd.get_short_help_str(limit)) for n, cmd in commands])

    def _lazy(self, name: str) -> click.Command | None:
        entry = self.lazy_commands.get(name)
        if entry is None:
            return None
        module_name, attr = entry[0].split(":")
        import importlib

        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command


def _stop_on_broken_pipe() -> NoReturn:
    # the reader went away (e.g. `| head`): quietly stop, as Unix tools do
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(ExitCode.OK)


def _stop_on_interrupt() -> NoReturn:
    click.echo("ibdtool: interrupted", err=True)
    sys.exit(ExitCode.INTERRUPTED)


@click.group(cls=IbdtoolGroup, context_settings={"help_option_names": ["-?", "--help"]})
@click.version_option(package_name="ibdtool")
@click.option("--traceback", is_flag=True, hidden=True, help="Show tracebacks (for developers).")
def main(traceback: bool) -> None:
    """See what an InnoDB tablespace really is on disk."""


def _emit_json(obj: Any) -> None:
    import json  # only where a command writes JSON: not for --help or text (start-up)

    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


#: per path: (path, result, None) or (path, None, error message)
Outcome = tuple[str, Any, str | None]


def _outcomes(paths: Sequence[str], fn: Callable[[str], Any]) -> list[Outcome]:
    """``fn`` on every path, in order; each failure is one line on stderr and the scan goes on."""
    outcomes: list[Outcome] = []
    for path in paths:
        try:
            outcomes.append((path, fn(path), None))
        except InputError as exc:
            click.echo(f"ibdtool: error: {shown(exc.message)}", err=True)
            outcomes.append((path, None, exc.message))
    return outcomes


def _emit_json_docs(
    paths: Sequence[str], outcomes: list[Outcome], to_json: Callable[[Any], Any]
) -> None:
    """The ``--json`` convention: one document on stdout — the object for one path, a list in
    the order of the paths for several, where a file that failed is ``{"path", "error"}``
    (the exit status still says so). Nothing on stdout when no file could be read."""
    if all(error is not None for _p, _r, error in outcomes):
        return
    docs = [
        {"path": path, "error": error} if error is not None else to_json(result)
        for path, result, error in outcomes
    ]
    _emit_json(docs[0] if len(paths) == 1 else docs)


def _fail_if_truncated(path: str) -> None:
    """After the whole pages were reported: a partial last page is bad input (exit 2)."""
    from ibdtool.tablespace import Tablespace

    with Tablespace(path) as ts:
        if ts.trailing_bytes:
            _fail(
                f"{path}: truncated: last page has {ts.trailing_bytes} of {ts.physical_size} bytes"
            )


# --- inspect ---------------------------------------------------------------------------------


@main.command()
@click.argument("paths", nargs=-1, required=True, type=_PATH)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON document: an object, or a list if several files (failures as "
    '{"path", "error"}).',
)
@click.option("--no-sdi", is_flag=True, help="Do not read the SDI (MySQL 8 dictionary).")
@click.option("--map", "show_map", is_flag=True, help="Draw the page map after the summary.")
@click.option(
    "--map-by",
    type=click.Choice(MAP_MODES),
    default="type",
    show_default=True,
    help="Colour the page map by page type, compression, allocation on disk or index.",
)
@click.option(
    "--map-svg",
    "map_svg",
    type=click.Path(dir_okay=False),
    help="Write the page map as SVG to this new file (never overwrites; one path only).",
)
@keyring_options
@schema_options
def inspect(
    paths: tuple[str, ...],
    as_json: bool,
    no_sdi: bool,
    show_map: bool,
    map_by: str,
    map_svg: str | None,
    keyring: Keyring | None,
    schemas: Schemas | None,
) -> None:
    """Summary of each tablespace: format, pages, compression, checksums, disk use."""
    from ibdtool.tablespace import inspect_path

    if map_svg and len(paths) > 1:
        raise click.UsageError("--map-svg takes one tablespace")
    maps: dict[str, Any] = {}

    def one(path: str) -> Any:
        schema = schemas.for_file(path, single=len(paths) == 1) if schemas else None
        if show_map or map_svg:
            from ibdtool.present import map_path

            result, maps[path] = map_path(
                path, map_by, with_sdi=not no_sdi, keyring=keyring, schema=schema
            )
            return result
        if as_json:  # no progress, no tables: Rich is not even imported
            return inspect_path(path, keyring, with_sdi=not no_sdi, schema=schema)
        from ibdtool.cli.render import progress_for

        with progress_for(path, enabled=True) as progress:
            return inspect_path(
                path, keyring, with_sdi=not no_sdi, progress=progress, schema=schema
            )

    outcomes = _outcomes(paths, one)
    results = [r for _p, r, e in outcomes if e is None]
    failed = len(results) < len(outcomes)
    truncated = [r for r in results if r.trailing_bytes]
    if as_json:
        _emit_json_docs(paths, outcomes, lambda r: r.to_json())
    else:
        from ibdtool.cli.render import print_inspect, print_map

        for r in results:
            print_inspect(r)
            if show_map:
                print_map(maps[r.path])
    if map_svg:
        from ibdtool.fs import create_new
        from ibdtool.present import svg

        for r in results:
            create_new(map_svg, svg(maps[r.path], os.path.basename(r.path)).encode())
    for r in truncated:
        click.echo(
            f"ibdtool: error: {shown(r.path)}: truncated: last page has {r.trailing_bytes} of "
            f"{r.fmt.physical_size} bytes",
            err=True,
        )
    if failed or truncated:
        sys.exit(ExitCode.BAD_INPUT)


# --- pages -----------------------------------------------------------------------------------


@main.command()
@click.argument("path", type=_PATH)
@click.option(
    "--type", "types", multiple=True, help="Only pages of this real type (name or number)."
)
@click.option("--from", "start", type=click.IntRange(min=0), default=0, help="First page.")
@click.option(
    "--to", "stop", type=click.IntRange(min=0), default=None, help="Last page (inclusive)."
)
@click.option(
    "--jsonl",
    "--json",
    "as_json",
    is_flag=True,
    help="JSON lines, one object per page as it is read (--json is the same: pages stream).",
)
@click.option("--csv", "as_csv", is_flag=True, help="CSV with a header row.")
@click.option("--wide", is_flag=True, help="Text: every column, however wide the terminal.")
@keyring_options
@schema_options
def pages(
    path: str,
    types: tuple[str, ...],
    start: int,
    stop: int | None,
    as_json: bool,
    as_csv: bool,
    wide: bool,
    keyring: Keyring | None,
    schemas: Schemas | None,
) -> None:
    """One row per page: type, compression, sizes, allocation, checksum, index fields."""
    from ibdtool.cli.render_plain import write_rows
    from ibdtool.tablespace import read_page_rows

    if as_json and as_csv:
        raise click.UsageError("choose one of --jsonl and --csv")
    if stop is not None and stop < start:
        raise InputError(f"--to {stop} is before --from {start}: no page is in that range")
    end = None if stop is None else stop + 1
    schema = schemas.for_file(path, single=True) if schemas else None
    if (
        as_json
    ):  # written from the stored bytes on every core, in page order (ibdtool.tablespace.pages_json)
        from ibdtool.tablespace import json_lines

        lines = json_lines(path, types=types, start=start, stop=end, keyring=keyring, schema=schema)
        for text in lines:
            sys.stdout.write(text)
        _fail_if_truncated(path)
        return
    rows = read_page_rows(path, types=types, start=start, stop=end, keyring=keyring, schema=schema)
    write_rows(rows, "csv" if as_csv else "text", wide)
    _fail_if_truncated(path)


# --- page ------------------------------------------------------------------------------------


@main.command()
@click.argument("path", type=_PATH)
@click.argument("page_no", metavar="N", type=click.IntRange(min=0))
@click.option("--raw", is_flag=True, help="The page's bytes on stdout (stored; see --logical).")
@click.option("--hex", "as_hex", is_flag=True, help="Only the hex dump.")
@click.option("--json", "as_json", is_flag=True, help="Fields with offsets, and the bytes in hex.")
@click.option(
    "--logical",
    is_flag=True,
    help="With --raw/--hex: the decrypted, decompressed page (a ROW_FORMAT=COMPRESSED index "
    "page rebuilt), not the stored one.",
)
@keyring_options
def page(
    path: str,
    page_no: int,
    raw: bool,
    as_hex: bool,
    as_json: bool,
    logical: bool,
    keyring: Keyring | None,
) -> None:
    """One page: every decoded field with its offset, and its bytes (stored and decompressed)."""
    from ibdtool.tablespace import dump_json, dump_page, hex_lines, text_lines

    if raw + as_hex + as_json > 1:
        _fail("choose one of --raw, --hex and --json")
    d = dump_page(path, page_no, keyring)
    data = d.logical if logical else d.stored
    if raw:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    elif as_hex:
        sys.stdout.write("\n".join(hex_lines(data)) + "\n")
    elif as_json:
        _emit_json(dump_json(d))
    else:
        sys.stdout.write("\n".join(text_lines(d)) + "\n")


# --- checksum --------------------------------------------------------------------------------


@main.command()
@click.argument("paths", nargs=-1, required=True, type=_PATH)
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), default=None, help="Processes (default: all cores)."
)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing; only the exit status.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON document: an object, or a list if several files (failures as "
    '{"path", "error"}).',
)
@keyring_options
def checksum(
    paths: tuple[str, ...], jobs: int | None, quiet: bool, as_json: bool, keyring: Keyring | None
) -> None:
    """Verify every page like innochecksum: exit 0 if all verify, 1 if any does not."""
    from ibdtool.cli.render_plain import checksum_json, print_checksum
    from ibdtool.tablespace import check_file

    outcomes = _outcomes(paths, lambda p: check_file(p, jobs=jobs, keyring=keyring))
    results = [r for _p, r, e in outcomes if e is None]
    failed = len(results) < len(outcomes)
    if as_json and not quiet:
        _emit_json_docs(paths, outcomes, checksum_json)
    bad = False
    for r in results:
        if not quiet and not as_json:
            print_checksum(r)
        bad = bad or bool(r.invalid_pages)
        if r.trailing_bytes:
            click.echo(
                f"ibdtool: error: {shown(r.path)}: truncated: last page has {r.trailing_bytes} of "
                f"{r.physical_size} bytes",
                err=True,
            )
            failed = True
    if failed:
        sys.exit(ExitCode.BAD_INPUT)
    if bad:
        sys.exit(ExitCode.FOUND)


# --- simulate --------------------------------------------------------------------------------


@main.command()
@click.argument("paths", nargs=-1, required=True, type=_PATH)
@click.option(
    "--algorithms",
    "-a",
    multiple=True,
    shell_complete=complete_algorithms,
    help=f"{codecs.spellings()}, a bare codec for every server, row (the ROW_FORMAT=COMPRESSED "
    "what-if, run only when -a names it or all), or all (default).",
)
@click.option(
    "--block-sizes",
    "-b",
    multiple=True,
    shell_complete=complete_block_sizes,
    help="512, 1k, 2k, 4k, 8k, 16k, 64k, ntfs:512..ntfs:4k, or all (default: the file's).",
)
@click.option("--sample", type=click.IntRange(min=1), help="Simulate N pages drawn at random.")
@click.option("--full", is_flag=True, help="Simulate every page (default for small files).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the sample.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Processes (default: all cores).")
@click.option(
    "--as-is",
    "as_is",
    is_flag=True,
    help="Simulate the pages as they are (what punching alone would do), not the file the "
    "conversion's rebuild writes (the default).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='One JSON document: an object, or a list if several (failures as {"path", "error"}).',
)
@click.option("--csv", "as_csv", is_flag=True, help="One CSV row per algorithm and block size.")
@click.option("--wide", is_flag=True, help="Table: every column, however wide the terminal.")
@click.option(
    "--plan-sample-above",
    type=click.IntRange(min=0),
    hidden=True,
    help="Plan the rebuild from sampled leaves above N index pages (tests and benches).",
)
@click.option(
    "--plan-sample-leaves",
    type=click.IntRange(min=2),
    hidden=True,
    help="Leaf pages a sampled rebuild plan reads, no more (tests and benches).",
)
@keyring_options
def simulate(
    paths: tuple[str, ...],
    algorithms: tuple[str, ...],
    block_sizes: tuple[str, ...],
    sample: int | None,
    full: bool,
    seed: int,
    jobs: int | None,
    as_is: bool,
    as_json: bool,
    as_csv: bool,
    wide: bool,
    plan_sample_above: int | None,
    plan_sample_leaves: int | None,
    keyring: Keyring | None,
) -> None:
    """Predict what page compression would allocate, per algorithm and filesystem block size:
    of the file the conversion's rebuild writes (records repacked, garbage gone), or with
    --as-is of the pages as they are."""
    from ibdtool.advise import (
        DEFAULT_SCENARIOS,
        parse_algorithms,
        parse_block_sizes,
        simulate_path,
        simulation_json,
        wants_row_compressed,
    )
    from ibdtool.cli.render import print_simulation, progress_for, write_simulation_csv

    if sample and full:
        raise click.UsageError("choose one of --sample and --full")
    if as_json and as_csv:
        raise click.UsageError("choose one of --json and --csv")
    scenarios = parse_algorithms(algorithms) if algorithms else list(DEFAULT_SCENARIOS)
    blocks = parse_block_sizes(block_sizes) if block_sizes else None
    plan: dict[str, Any] = {}  # the rebuild plan's sampling, when a test or bench sets it
    if plan_sample_above is not None:
        plan["plan_sample_above"] = plan_sample_above
    if plan_sample_leaves is not None:  # that many leaves, not grown to a target
        plan["plan_sample_leaves"] = plan_sample_leaves
        plan["plan_target"] = None

    def one(path: str) -> Any:
        with progress_for(f"simulate {path}", enabled=not (as_json or as_csv)) as bar:
            return simulate_path(
                path,
                scenarios,
                blocks,
                sample=sample,
                full=True if full else None,
                seed=seed,
                jobs=jobs,
                row_compressed=wants_row_compressed(algorithms),
                progress=(lambda done, total: bar(done, total)) if bar else None,
                keyring=keyring,
                as_rebuilt=not as_is,
                **plan,
            )

    outcomes = _outcomes(paths, one)
    results = [r for _p, r, e in outcomes if e is None]
    failed = len(results) < len(outcomes)
    if not results:
        pass  # nothing on stdout when no file could be read: errors are on stderr only
    elif as_json:
        _emit_json_docs(paths, outcomes, simulation_json)
    elif as_csv:
        write_simulation_csv(results)
    else:
        for r in results:
            print_simulation(r, wide)
    if failed:
        sys.exit(ExitCode.BAD_INPUT)


# --- sdi -------------------------------------------------------------------------------------


@main.command()
@click.argument("path", type=_PATH)
@keyring_options
def sdi(path: str, keyring: Keyring | None) -> None:
    """The MySQL 8 SDI as JSON, in ibd2sdi's shape."""
    from ibdtool.parsers.sdi import ibd2sdi_shape
    from ibdtool.tablespace import Tablespace

    with Tablespace(path, keyring) as ts:
        if ts.format.sdi_root is None:
            raise InputError(f"{path}: has no SDI (only MySQL 8.0+ tablespaces carry one)")
        entries = ts.sdi()
        for warning in ts.sdi_warnings:
            click.echo(f"ibdtool: warning: {shown(path)}: {shown(warning)}", err=True)
    _emit_json(ibd2sdi_shape(entries))
    _fail_if_truncated(path)
