"""``ibdtool copy``: move tablespaces without losing their holes, locally or over ssh.

Only argument handling, progress and output live here; the work is in
:mod:`ibdtool.copy.local` (this host), :mod:`ibdtool.copy.remote` (ssh) and
:mod:`ibdtool.copy.repunch` (what a tablespace does not need).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ibdtool.cli.ssh_option import ssh_options
from ibdtool.errors import ExitCode, IbdtoolError
from ibdtool.present import shown

if TYPE_CHECKING:
    from rich.text import Text

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgKMG]?)(?:i?[bB](?:/s)?)?\s*$")


def parse_rate(text: str | None) -> int:
    """``--bwlimit``: bytes per second, with an optional K/M/G suffix (powers of 1024)."""
    if not text:
        return 0
    m = _RATE.match(text)
    if not m:
        raise click.BadParameter(f"{text!r}: expected a rate such as 500K, 20M or 1G")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


@click.command(context_settings={"help_option_names": ["-?", "--help"]})
@click.argument("paths", nargs=-1, required=True)
@click.option("--force", "-f", is_flag=True, help="Overwrite an existing destination.")
@click.option(
    "--resume", is_flag=True, help="Continue an interrupted copy after its last verified window."
)
@click.option(
    "--repunch/--no-repunch",
    default=None,
    help="Leave out the zero tails of compressed page slots and all-zero pages, as the "
    "server would have punched them  [default: on for *.ibd]",
)
@click.option(
    "--dig-holes",
    is_flag=True,
    help="Also punch every all-zero filesystem block (as cp --sparse=always does).",
)
@click.option(
    "--verify",
    type=click.Choice(["full", "data", "none"]),
    default="full",
    show_default=True,
    help="data: read every window back and compare CRC-32s; full: also check every page "
    "checksum of a tablespace.",
)
@click.option("--no-verify", is_flag=True, help="Same as --verify none.")
@click.option(
    "--compress",
    type=click.Choice(["auto", "zstd", "zlib", "none"]),
    default="auto",
    show_default=True,
    help="Over ssh: auto uses zstd when the remote python3 has it.",
)
@click.option(
    "--bwlimit", metavar="RATE", help="Limit the bytes copied or sent per second (e.g. 50M)."
)
@ssh_options("Over ssh: ")
@click.option(
    "--in-place",
    is_flag=True,
    help="Re-punch the FILEs themselves (no copy); refused on files a server may be using.",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask before changing files in place.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def copy(
    paths: tuple[str, ...],
    force: bool,
    resume: bool,
    repunch: bool | None,
    dig_holes: bool,
    verify: str,
    no_verify: bool,
    compress: str,
    bwlimit: str | None,
    rsh: str | None,
    ssh_option: tuple[str, ...],
    remote_python: str | None,
    in_place: bool,
    yes: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Copy SRC... to DST keeping holes; either side may be [user@]host:path.

    \b
      ibdtool copy t.ibd /backup/                 local, holes kept, re-punched
      ibdtool copy t.ibd db2:/var/lib/mysql/s/    push over ssh (remote needs python3)
      ibdtool copy db1:/data/s/t.ibd .            pull
      ibdtool copy --in-place --repunch t.ibd     give a densified file its holes back

    Writes go to a temporary name beside the destination, are verified, fsynced and renamed.
    """
    from ibdtool.copy import VERIFY_MODES, CopyOptions

    assert verify in VERIFY_MODES
    opts = CopyOptions(
        force=force,
        resume=resume,
        repunch=repunch,
        dig_holes=dig_holes,
        verify="none" if no_verify else verify,
        compress=compress,
        bwlimit=parse_rate(bwlimit),
    )
    show = not (as_json or quiet)
    _SAID.clear()
    if in_place:
        failed = _in_place(paths, opts, yes=yes, as_json=as_json, show=show)
    else:
        if len(paths) < 2:
            raise click.UsageError("give a source and a destination (or --in-place FILE)")
        failed = _copy_all(paths, opts, rsh, ssh_option, remote_python, as_json, show)
    if failed:
        sys.exit(failed)


def _report_error(exc: IbdtoolError) -> int:
    click.echo(f"ibdtool: error: {shown(exc.message)}", err=True)
    return int(exc.exit_code)


_SAID: set[str] = set()


def _deliver(
    result: Any, docs: list[dict[str, Any]], as_json: bool, show: bool, printer: Any
) -> None:
    """Notes to stderr (each once per run); the result as JSON (collected) or printed."""
    for note in result.notes:
        if note not in _SAID:
            _SAID.add(note)
            click.echo(f"ibdtool: note: {shown(note)}", err=True)
    if as_json:
        docs.append(result.to_json())
    elif show:
        printer(result)


def _emit(docs: list[dict[str, Any]], single: bool) -> None:
    import json

    if docs:
        sys.stdout.write(json.dumps(docs[0] if single else docs, indent=2) + "\n")


# --- copies --------------------------------------------------------------------------------------


def _copy_all(
    paths: tuple[str, ...],
    opts: Any,
    rsh: str | None,
    ssh_option: tuple[str, ...],
    remote_python: str | None,
    as_json: bool,
    show: bool,
) -> int:
    from ibdtool.copy import Sessions, SshConfig, parse_location

    srcs = [parse_location(p) for p in paths[:-1]]
    dst = parse_location(paths[-1])
    want_dir = len(srcs) > 1
    if dst.host is None and (want_dir or dst.path.endswith("/")) and not os.path.isdir(dst.path):
        what = "no such directory" if not os.path.exists(dst.path) else "not a directory"
        raise IbdtoolError(f"{dst.path}: {what}")
    sessions = Sessions(SshConfig.from_cli(rsh, ssh_option, remote_python))
    docs: list[dict[str, Any]] = []
    worst = 0
    try:
        for src in srcs:
            try:
                result = _copy_one(src, dst, opts, want_dir, sessions, show)
            except IbdtoolError as exc:
                for host in {src.host, dst.host} - {None}:
                    sessions.drop(str(host))
                if exc.exit_code == ExitCode.INTERRUPTED:
                    raise
                if exc.message not in _SAID:  # e.g. the same unreachable host for every file
                    _SAID.add(exc.message)
                    worst = max(worst, _report_error(exc))
                continue
            _deliver(result, docs, as_json, show, print_copy)
    finally:
        sessions.close()
        _emit(docs, single=len(srcs) == 1)
    return worst


def _copy_one(src: Any, dst: Any, opts: Any, want_dir: bool, sessions: Any, show: bool) -> Any:
    from ibdtool.cli.render import progress_for
    from ibdtool.copy import (
        AgentError,
        CopyFailed,
        copy_local,
        pull,
        push,
        relay,
        resolve_destination,
    )

    label = os.path.basename(src.path.rstrip("/")) or str(src)
    with progress_for(f"copy {label}", enabled=show, byte_units=True) as bar:
        progress = _progress_adapter(bar) if bar else None
        if src.host is None and dst.host is None:
            try:
                final = resolve_destination(dst.path, os.path.basename(src.path), want_dir)
            except AgentError as exc:
                raise CopyFailed(str(exc)) from None
            if (
                os.path.exists(final)
                and os.path.exists(src.path)
                and os.path.samefile(final, src.path)
            ):
                raise CopyFailed(f"{src.path} and {final} are the same file")
            return copy_local(src.path, final, opts, progress)
        if src.host is None:
            session = sessions.get(dst.host)
            return push(session, src.path, dst, opts, want_dir=want_dir, progress=progress)
        if dst.host is None:
            session = sessions.get(src.host)
            return pull(session, src, dst.path, opts, want_dir=want_dir, progress=progress)
        return relay(
            sessions.get(src.host),
            src,
            sessions.get(dst.host, role="receiver"),
            dst,
            opts,
            want_dir=want_dir,
            progress=progress,
        )


def _progress_adapter(bar: Callable[..., None]) -> Callable[[Any], None]:
    from ibdtool.present import human_bytes

    def update(ev: Any) -> None:
        if ev.phase == "copy":
            info = f"read {human_bytes(ev.read)}"
            if ev.sent != ev.read:
                info += f" · sent {human_bytes(ev.sent)}"
            if ev.dest_allocated:
                info += f" · allocated there {human_bytes(ev.dest_allocated)}"
            bar(ev.done, ev.total, info=info, moved=ev.read)
        elif ev.phase == "check":
            bar(ev.done, ev.total, info="checking every page checksum")
        else:
            what = {"scan": "finding needless pages", "punch": "punching needless pages"}.get(
                ev.phase, "finding zero blocks"
            )
            bar(ev.done, ev.total, info=what)

    return update


def print_copy(r: Any) -> None:
    """What a DBA wants to see after a copy: sizes at both ends, bytes moved, verification."""

    from ibdtool.cli.render import literal, out
    from ibdtool.present import human_bytes

    hb = human_bytes
    con = out()
    con.print(literal(f"{r.source} → {r.dest}", style="bold"), soft_wrap=True)
    con.print(
        f"  {hb(r.logical_size)} logical · allocated {hb(r.source_allocated)} at the source, "
        f"{hb(r.dest_allocated)} at the destination · {_n(r.data_ranges, 'data range')}",
        soft_wrap=True,
    )
    moved = f"  read {hb(r.bytes_read)} · sent {hb(r.bytes_sent)}"
    if r.codec != "none":
        moved += f" ({r.codec})"
    if r.resumed_bytes:
        moved += f" · {hb(r.resumed_bytes)} were already there (resumed)"
    con.print(moved + f" · {r.elapsed:.1f} s", soft_wrap=True)
    if r.needless is not None and (r.needless.bytes or r.needless.stale_tails):
        n = r.needless
        line = (
            f"  re-punched: {n.compressed_slots} compressed page tails and {n.zero_pages} "
            f"all-zero pages ({hb(n.bytes)})"
        )
        if n.stale_tails:
            line += f"; {n.stale_tails} slots keep stale non-zero bytes beyond their image"
        con.print(line, soft_wrap=True)
    if r.zero_block_bytes:
        con.print(f"  dug holes: {hb(r.zero_block_bytes)} of all-zero blocks")
    con.print(_verify_line(r.verify, r.windows, r.pages), soft_wrap=True)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _verify_line(mode: str, windows: int, pages: dict[str, Any] | None) -> Text:
    from rich.text import Text

    if mode == "none":
        return Text.assemble("  ", ("not verified", "yellow"), " (--verify none)")
    line = Text.assemble(
        "  ", ("verified", "green"), f": {_n(windows, 'window')} read back equal to the source"
    )
    if pages:
        line.append(
            f"; {pages['pages']} pages at the {pages['where'].split(' ')[0]}: "
            f"{pages['valid']} valid, {pages['empty']} empty, {pages['invalid']} invalid"
        )
        if pages.get("invalid_in_source_too"):
            line.append(" (invalid in the source too)", "yellow")
    return line


# --- in place ------------------------------------------------------------------------------------


def _in_place(paths: tuple[str, ...], opts: Any, *, yes: bool, as_json: bool, show: bool) -> int:
    from ibdtool.cli.render import progress_for
    from ibdtool.copy import repunch_in_place
    from ibdtool.present import human_bytes

    if opts.repunch is False and not opts.dig_holes:
        raise click.UsageError("--in-place with --no-repunch has nothing to do (add --dig-holes)")
    if not yes and not sys.stdin.isatty():
        raise IbdtoolError(
            "refusing to change files in place without a terminal to confirm on; pass --yes"
        )

    def confirm(preview: Any) -> bool:
        return click.confirm(
            f"{preview.path}: punch {human_bytes(preview.punched_bytes)} of zero bytes "
            f"(allocated now {human_bytes(preview.allocated_before)})?",
            default=False,
            err=True,
        )

    docs: list[dict[str, Any]] = []
    worst = 0
    for path in paths:
        try:
            with progress_for(f"re-punch {os.path.basename(path)}", enabled=show) as bar:
                result = repunch_in_place(
                    path,
                    repunch=opts.repunch is not False,
                    dig_holes=opts.dig_holes,
                    verify=opts.verify,
                    confirm=None if yes else confirm,  # --yes: one scan, no preview
                    progress=_progress_adapter(bar) if bar else None,
                )
        except IbdtoolError as exc:
            worst = max(worst, _report_error(exc))
            continue
        _deliver(result, docs, as_json, show, _print_in_place)
    _emit(docs, single=len(paths) == 1)
    return worst


def _print_in_place(r: Any) -> None:
    from rich.text import Text

    from ibdtool.cli.render import literal, out
    from ibdtool.present import human_bytes

    hb = human_bytes
    con = out()
    con.print(literal(r.path, style="bold"), soft_wrap=True)
    con.print(
        f"  allocated {hb(r.allocated_before)} → {hb(r.allocated_after)} "
        f"({hb(r.logical_size)} logical) · punched {hb(r.punched_bytes)} · {r.elapsed:.1f} s",
        soft_wrap=True,
    )
    if r.needless is not None:
        n = r.needless
        con.print(
            f"  {n.compressed_slots} compressed page tails, {n.zero_pages} all-zero pages"
            + (f", {n.stale_tails} stale tails kept" if n.stale_tails else "")
        )
    if r.pages:
        p = r.pages
        con.print(
            Text.assemble(
                "  ",
                ("pages", "green"),
                f": {p['valid']} valid, {p['empty']} empty, {p['invalid']} invalid",
            )
        )
