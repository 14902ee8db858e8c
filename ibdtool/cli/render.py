"""Human output for the CLI: Rich panels and tables, progress bars, and streamed row writers.

Progress goes to stderr and only when stderr is a terminal; data goes to stdout. Rich respects
``NO_COLOR`` and plain pipes by itself.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from ibdtool.allocation import Allocation
    from ibdtool.inspect import InspectResult
    from ibdtool.simulate import Scenario, SimResult
    from parsers.constants import Vendor
    from parsers.space import SpaceFormat

_out: Console | None = None
_err: Console | None = None


class PipeConsole(Console):
    """Rich exits with status 1 when the reader of a pipe goes away (``| head``), which a
    script would take for a failure; raise so the CLI stops quietly with 0 instead."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def out() -> Console:
    """stdout: Rich on a terminal; on a pipe or a file, no colour and lines not folded at 80."""
    global _out
    if _out is None:
        _out = PipeConsole(highlight=False, soft_wrap=False)
        if not _out.is_terminal:
            _out = PipeConsole(highlight=False, soft_wrap=False, width=160)
    return _out


def err() -> Console:
    global _err
    if _err is None:
        _err = Console(stderr=True, highlight=False)
    return _err


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def human_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _size_k(n: int) -> str:
    return f"{n // 1024}K" if n >= 1024 else f"{n}"


@contextmanager
def progress_for(
    label: str, enabled: bool = True, total: int | None = None, byte_units: bool = False
) -> Iterator[Callable[..., None] | None]:
    """A Rich progress callback on a terminal, else None.

    ``update(done, of=None, info=None, label=None)``; ``info`` is shown after the bar (e.g.
    bytes sent), ``label`` replaces the description; ``byte_units`` shows sizes and a rate.
    """
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    count = (DownloadColumn(), TransferSpeedColumn()) if byte_units else (MofNCompleteColumn(),)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        *count,
        TimeRemainingColumn(),
        TextColumn("{task.fields[info]}"),
        console=err(),
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=total, info="")

        def update(
            done: int, of: int | None = None, info: str | None = None, label: str | None = None
        ) -> None:
            fields: dict[str, Any] = {} if info is None else {"info": info}
            if label is not None:
                fields["description"] = label
            progress.update(task, completed=done, total=of if of is not None else total, **fields)

        yield update


def _counts(counter: dict[str, int], total: int | None = None) -> Text:
    text = Text()
    for i, (name, n) in enumerate(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))):
        if i:
            text.append(" · ", style="dim")
        text.append(name, style="bold")
        text.append(f" {n}")
        if total:
            text.append(f" ({100 * n / total:.0f}%)", style="dim")
    return text


def print_inspect(r: InspectResult) -> None:
    """One block per file, as a DBA reads it top to bottom."""
    con = out()
    con.print(Text(r.path, style="bold underline"))
    con.print(inspect_grid(r))
    con.print()


def format_rows(fmt: SpaceFormat, vendor: Vendor) -> list[tuple[str, str]]:
    """The "Format" and "Page size" rows: what page 0 alone tells."""
    from ibdtool.inspect import format_name

    sizes = f"{_size_k(fmt.logical_size)} logical / {_size_k(fmt.physical_size)} physical"
    flags = " ".join(fmt.flags.names()) or "-"
    return [
        ("Format", f"{format_name(fmt, vendor)}  (vendor {vendor.value}, space id {fmt.space_id})"),
        ("Page size", f"{sizes}   flags 0x{fmt.flags.raw:x} {flags}"),
    ]


def disk_text(logical_size: int, a: Allocation) -> str:
    """The "Disk" row: logical against allocated size, blocks and extents."""
    saved = logical_size - a.allocated
    pct = 100 * saved / logical_size if logical_size else 0
    disk = (
        f"{human_bytes(logical_size)} logical → {human_bytes(a.allocated)} allocated "
        f"({pct:.0f}% {'saved' if saved >= 0 else 'over'}) · "
        f"{human_bytes(a.fs_block_size)} blocks · {a.extents if a.extents is not None else '?'} "
        f"extent{'' if a.extents == 1 else 's'}"
    )
    if a.unwritten_extents:
        disk += f" ({a.unwritten_extents} unwritten)"
    return disk


def inspect_grid(r: InspectResult) -> Table:
    """The inspect summary as a two-column grid (the CLI prints it, the TUI shows it)."""
    fmt = r.fmt
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="cyan", no_wrap=True)
    grid.add_column()
    for name, value in format_rows(fmt, r.vendor):
        grid.add_row(name, value)
    row_format = r.row_format or "unknown (full_crc32 flags do not record it)"
    if fmt.key_block_size:
        row_format += f" KEY_BLOCK_SIZE={fmt.key_block_size // 1024}"
    if r.sdi and r.sdi.table:
        row_format += f"   table {r.sdi.schema}.{r.sdi.table}"
        if r.sdi.compression:
            row_format += f" COMPRESSION='{r.sdi.compression}'"
    grid.add_row("Row format", row_format)
    grid.add_row("Pages", Text(f"{r.pages}  ").append_text(_counts(r.page_types)))
    grid.add_row("Compression", _counts(r.compression, r.pages))
    chk = Text()
    chk.append(f"{r.checksum_valid} valid", style="green")
    by = {k: v for k, v in r.checksum_by_algo.items() if k not in ("empty", "invalid")}
    if by:
        chk.append(" (").append_text(_counts(by)).append(")")
    chk.append(f" · {r.checksum_empty} empty")
    if r.unverifiable:
        chk.append(f" · {r.unverifiable} unverifiable (encrypted)", style="yellow")
    invalid = len(r.invalid_pages)
    chk.append(f" · {invalid} invalid", style="bold red" if invalid else "")
    if invalid:
        shown = ", ".join(map(str, r.invalid_pages[:20]))
        chk.append(f": pages {shown}{' …' if invalid > 20 else ''}", style="red")
    grid.add_row("Checksums", chk)
    grid.add_row("Disk", disk_text(r.logical_size, r.allocation))
    if r.compression.get("none", 0) != r.pages:
        unp = Text(f"{r.unpunched_pages} compressed pages")
        if r.unpunched_pages:
            unp.append(
                f" hold {human_bytes(r.unpunched_bytes)} more than their images need",
                style="yellow",
            )
        grid.add_row("Unpunched", unp)
    if r.sdi and r.sdi.indexes:
        idx = Text()
        for i, (iid, name) in enumerate(r.sdi.indexes.items()):
            if i:
                idx.append(" · ", style="dim")
            idx.append(name, style="bold").append(
                f" ({iid}) {_plural(r.index_pages.get(iid, 0), 'page')}"
            )
        grid.add_row("Indexes", idx)
    if r.avg_fill is not None:
        grid.add_row("Leaf fill", f"{100 * r.avg_fill:.0f}% average")
    if r.free.get("pages"):
        n_free = r.free["pages"]
        free = Text(f"{n_free} page{'s' if n_free != 1 else ''} free by the extent descriptors")
        if r.free.get("with_data"):
            free.append(f", {r.free['with_data']} still holding old data")
        if r.free.get("allocated_bytes"):
            free.append(
                f", {human_bytes(r.free['allocated_bytes'])} allocated on disk", style="yellow"
            )
        grid.add_row("Free space", free)
    for w in r.warnings:
        grid.add_row("Warning", Text(w, style="yellow"))
    for n, problem in r.problems[:10]:
        grid.add_row("Problem", Text(f"page {n}: {problem}", style="red"))
    if len(r.problems) > 10:
        grid.add_row("", Text(f"… {len(r.problems) - 10} more problems", style="red"))
    return grid


def write_rows(rows: Iterable[dict[str, Any]], fmt: str) -> None:
    """Stream rows to stdout as aligned text, JSON lines or CSV."""
    w = sys.stdout.write
    writer: Any = None
    for row in rows:
        if fmt == "json":
            w(json.dumps(row) + "\n")
        elif fmt == "csv":
            if writer is None:
                writer = csv.DictWriter(sys.stdout, fieldnames=list(row))
                writer.writeheader()
            writer.writerow(row)
        else:
            if writer is None:
                writer = True
                w(_text_line(row, header=True))
            w(_text_line(row))


_TEXT_COLUMNS = (
    ("page", 7),
    ("type", 16),
    ("compression", 11),
    ("compressed_size", 10),
    ("stored_size", 10),
    ("allocated", 9),
    ("checksum", 15),
    ("lsn", 12),
    ("index_id", 9),
    ("level", 5),
    ("n_recs", 6),
    ("fill", 5),
    ("problem", 0),
)


def _text_line(row: dict[str, Any], header: bool = False) -> str:
    cells = []
    for name, width in _TEXT_COLUMNS:
        value = name.upper() if header else row.get(name)
        text = "" if value is None else str(value)
        if name == "checksum" and not header and row.get("valid") is False:
            text = "INVALID"
        cells.append(text.rjust(width) if width and name != "type" else text.ljust(width))
    return " ".join(cells).rstrip() + "\n"


def ci_text(ci: tuple[int, int] | list[int] | None, predicted: int) -> str:
    if not ci:
        return "exact"
    half = (ci[1] - ci[0]) / 2
    return f"±{100 * half / predicted:.1f}%" if predicted else "±?"


def print_simulation(r: SimResult) -> None:
    """The simulate table, then the recommendation lines."""
    from rich import box

    con = out()
    con.print(Text(r.path, style="bold underline"))
    con.print(simulation_heading(r))
    current = current_state_text(r)
    if current:
        con.print(current)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("algorithm")
    table.add_column("block", justify="right")
    table.add_column("predicted", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("saving", justify="right")
    table.add_column("µs/page c/d", justify="right")
    for res in r.results:
        saving = Text(f"{res.saving_pct:.1f}%", style="green" if res.saving_pct > 0 else "red")
        cpu = (
            "-"
            if res.compress_us is None
            else f"{res.compress_us:.0f}/{res.decompress_us or 0:.0f}"
        )
        table.add_row(
            scenario_label(res.scenario),
            res.block.label,
            human_bytes(res.predicted),
            ci_text(res.ci95, res.predicted),
            saving,
            cpu,
        )
    con.print(table)
    if any(x.scenario.server == "what-if" for x in r.results):
        con.print("[dim]what-if rows are not an InnoDB option: they show the data's headroom[/]")
    if r.row_compressed:
        zt = Table(box=box.SIMPLE_HEAD, pad_edge=False, title="ROW_FORMAT=COMPRESSED what-if")
        zt.add_column("KEY_BLOCK_SIZE", justify="right")
        zt.add_column("failures", justify="right")
        zt.add_column("predicted size", justify="right")
        zt.add_column("95% CI", justify="right")
        for z in r.row_compressed:
            zt.add_row(
                f"{z.key_block_size // 1024}K",
                f"{100 * z.failure_rate:.0f}%",
                human_bytes(z.predicted_size),
                ci_text(z.ci95, z.predicted_size),
            )
        con.print(zt)
    for line in recommendations(r):
        con.print(line)
    for note in r.notes:
        con.print(Text(note, style="yellow"))
    con.print()


def simulation_heading(r: SimResult) -> str:
    """Pages, sizes today and how many pages were simulated."""
    scan = (
        "full scan" if r.full else f"{r.pages_sampled} of {r.pages} pages sampled (seed {r.seed})"
    )
    return (
        f"{r.pages} pages of {_size_k(r.page_size)}, {human_bytes(r.logical_size)} logical, "
        f"{human_bytes(r.allocated_size)} allocated today on "
        f"{human_bytes(r.fs_block_size)} blocks; {scan}"
    )


def current_state_text(r: SimResult) -> str | None:
    """For a file already compressed: its pages, ideal and actual allocation (None otherwise)."""
    cur = r.current
    if not cur.get("compressed_pages"):
        return None
    algos = ", ".join(f"{k} {v}" for k, v in cur["algorithms"].items())
    return (
        f"already compressed: {cur['compressed_pages']} pages ({algos}); ideal allocation "
        f"{human_bytes(cur['ideal_allocated'])}, actual {human_bytes(cur['actual_allocated'])}"
        + (f", {cur['unpunched_pages']} slots never punched" if cur["unpunched_pages"] else "")
    )


def scenario_label(s: Scenario) -> str:
    level = f":{s.level}" if s.level is not None else ""
    if s.server == "what-if":
        return f"{s.algorithm}{level} (what-if)"
    return f"{s.server} {s.algorithm}{level}"


def recommendations(r: SimResult) -> list[str]:
    """Best algorithm per block size on saving and on CPU, and warnings."""
    lines: list[str] = []
    blocks = sorted({res.block for res in r.results}, key=lambda b: (b.ntfs_unit or 0, b.size))
    for b in blocks:
        rows = [x for x in r.results if x.block == b and x.scenario.server != "what-if"]
        if not rows:
            continue
        best = max(rows, key=lambda x: x.saving_pct)
        if best.saving_pct <= 1.0:
            why = (
                "NTFS frees space only in 16-cluster units"
                if b.ntfs_unit
                else f"{b.label} blocks are too large for {_size_k(r.page_size)} pages"
                if b.size * 2 > r.page_size
                else "the file is already ROW_FORMAT=COMPRESSED"
                if r.zip_source
                else "the data does not compress"
            )
            lines.append(f"[yellow]warning:[/] {b.label} blocks: compression saves nothing ({why})")
            continue
        # no timings when every page looked at was empty: then the best is also the cheapest
        good = [x for x in rows if x.saving_pct >= best.saving_pct - 5 and x.compress_us] or [best]
        cheapest = min(good, key=lambda x: (x.compress_us or 0) + (x.decompress_us or 0))
        line = (
            f"{b.label} blocks: {scenario_label(best.scenario)} saves most ({best.saving_pct:.0f}%)"
        )
        if cheapest is not best:
            line += (
                f"; {scenario_label(cheapest.scenario)} is the cheapest within 5 points "
                f"({cheapest.saving_pct:.0f}%, {cheapest.compress_us:.0f}+"
                f"{cheapest.decompress_us:.0f} µs/page)"
            )
        lines.append(line)
    return lines


def write_simulation_csv(results: list[SimResult]) -> None:
    w = csv.writer(sys.stdout)
    w.writerow(
        [
            "path", "server", "algorithm", "level", "block_size", "ntfs_unit", "pages",
            "pages_sampled", "allocated_size", "predicted_allocated", "ci95_low", "ci95_high",
            "saving_pct", "compress_us_per_page", "decompress_us_per_page",
        ]
    )  # fmt: skip
    for r in results:
        for x in r.results:
            w.writerow(
                [
                    r.path, x.scenario.server, x.scenario.algorithm, x.scenario.level,
                    x.block.size, x.block.ntfs_unit, r.pages, r.pages_sampled, r.allocated_size,
                    x.predicted, x.ci95[0] if x.ci95 else "", x.ci95[1] if x.ci95 else "",
                    f"{x.saving_pct:.2f}",
                    "" if x.compress_us is None else f"{x.compress_us:.1f}",
                    "" if x.decompress_us is None else f"{x.decompress_us:.1f}",
                ]
            )  # fmt: skip
