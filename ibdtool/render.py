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
    from ibdtool.checkscan import CheckResult
    from ibdtool.inspect import InspectResult

_out: Console | None = None
_err: Console | None = None


def out() -> Console:
    global _out
    if _out is None:
        _out = Console(highlight=False, soft_wrap=False)
    return _out


def err() -> Console:
    global _err
    if _err is None:
        _err = Console(stderr=True, highlight=False)
    return _err


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
    label: str, enabled: bool = True, total: int | None = None
) -> Iterator[Callable[[int], None] | None]:
    """A Rich progress callback on a terminal, else None."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err(),
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=total)

        def update(done: int) -> None:
            progress.update(task, completed=done)

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
    from ibdtool.inspect import format_name

    con = out()
    fmt = r.fmt
    a = r.allocation
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="cyan", no_wrap=True)
    grid.add_column()
    grid.add_row(
        "Format",
        f"{format_name(fmt, r.vendor)}  (vendor {r.vendor.value}, space id {fmt.space_id})",
    )
    sizes = f"{_size_k(fmt.logical_size)} logical / {_size_k(fmt.physical_size)} physical"
    flags = " ".join(fmt.flags.names()) or "-"
    grid.add_row("Page size", f"{sizes}   flags 0x{fmt.flags.raw:x} {flags}")
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
    saved = r.logical_size - a.allocated
    pct = 100 * saved / r.logical_size if r.logical_size else 0
    disk = (
        f"{human_bytes(r.logical_size)} logical → {human_bytes(a.allocated)} allocated "
        f"({pct:.0f}% {'saved' if saved >= 0 else 'over'}) · "
        f"{human_bytes(a.fs_block_size)} blocks · {a.extents if a.extents is not None else '?'} "
        f"extents"
    )
    if a.unwritten_extents:
        disk += f" ({a.unwritten_extents} unwritten)"
    grid.add_row("Disk", disk)
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
            idx.append(name, style="bold").append(f" ({iid}) {r.index_pages.get(iid, 0)} pages")
        grid.add_row("Indexes", idx)
    if r.avg_fill is not None:
        grid.add_row("Leaf fill", f"{100 * r.avg_fill:.0f}% average")
    for w in r.warnings:
        grid.add_row("Warning", Text(w, style="yellow"))
    for n, problem in r.problems[:10]:
        grid.add_row("Problem", Text(f"page {n}: {problem}", style="red"))
    if len(r.problems) > 10:
        grid.add_row("", Text(f"… {len(r.problems) - 10} more problems", style="red"))
    con.print(Text(r.path, style="bold underline"))
    con.print(grid)
    con.print()


def print_checksum(r: CheckResult) -> None:
    con = out()
    by = ", ".join(f"{k} {v}" for k, v in sorted(r.by_algorithm.items(), key=lambda kv: -kv[1]))
    status = "[green]OK[/]" if not r.invalid_pages else "[bold red]FAILED[/]"
    line = (
        f"{r.path}: {status} {r.pages} pages: {r.valid} valid, {r.empty} empty, "
        f"{len(r.invalid_pages)} invalid"
        + (f", {r.unverifiable} unverifiable" if r.unverifiable else "")
        + (f" ({by})" if by else "")
    )
    con.print(line, soft_wrap=True)
    if r.invalid_pages:
        shown = ", ".join(map(str, r.invalid_pages[:50]))
        more = f" … and {len(r.invalid_pages) - 50} more" if len(r.invalid_pages) > 50 else ""
        con.print(f"  invalid pages: {shown}{more}", style="red")


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
