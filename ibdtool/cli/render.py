"""Human output for the CLI: Rich panels and tables, progress bars, and streamed row writers.

Progress goes to stderr and only when stderr is a terminal; data goes to stdout. Rich respects
``NO_COLOR`` and plain pipes by itself. Every console here is a :class:`SafeConsole`: strings are
never read as Rich markup (a table named ``[bold]x`` prints as such) and control characters in
anything printed are shown escaped (:func:`ibdtool.text.shown`), whoever forgot to escape them.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ibdtool.advise import recommendations
from ibdtool.present import (
    ci_text,
    cost_note,
    cost_text,
    current_state_text,
    drop_note,
    hms,
    human_bytes,
    inspect_rows,
    rebuild_text,
    recommendation_text,
    scenario_label,
    seconds_text,
    shown,
    shown_spans,
    simulation_heading,
)

if TYPE_CHECKING:
    from ibdtool.advise import Cost, SimResult
    from ibdtool.cli.fit import Col
    from ibdtool.present import PageMap
    from ibdtool.tablespace import InspectResult

_out: Console | None = None
_err: Console | None = None


def _lines_shown(text: str) -> str:
    """:func:`ibdtool.text.shown` on each line: the line breaks a renderable was built with
    stay (a name's own newline was escaped when the name was put into words)."""
    return "\n".join(shown(line) for line in text.split("\n"))


def literal(text: str = "", style: Any = "", **kwargs: Any) -> Text:
    """``Text(text, style)`` of one outside name or message: escaped first, newlines too
    (:func:`ibdtool.text.shown`), so that nothing is lost to Rich, which drops BEL, BS, VT, FF
    and CR."""
    return Text(shown(text), style=style, **kwargs)


def safe_text(text: Text) -> Text:
    """``text`` with its control characters escaped (:func:`ibdtool.present.shown_spans`),
    line breaks kept, its styles kept on the same characters."""
    moved = shown_spans(text.plain, [(s.start, s.end) for s in text.spans])
    if moved is None:
        return text
    new = text.blank_copy(moved[0])
    for span, (start, end) in zip(text.spans, moved[1], strict=True):
        new.stylize(span.style, start, end)
    return new


class SafeConsole(Console):
    """A Rich console that prints text, never obeys it: ``str`` is taken literally (no markup,
    whatever ``markup=`` says) and every string or :class:`Text` it renders, down to a table
    cell or a progress column, has its control characters escaped. Names from files and
    servers reach a terminal only through here or :func:`ibdtool.text.shown`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["markup"] = False
        super().__init__(*args, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        kwargs["markup"] = False
        return super().render_str(_lines_shown(text), **kwargs)

    def render(self, renderable: Any, options: Any = None) -> Any:
        if isinstance(renderable, Text):
            renderable = safe_text(renderable)
        return super().render(renderable, options)


class PipeConsole(SafeConsole):
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


def table_console(wide: bool = False) -> Console:
    """stdout for tables sized by :mod:`ibdtool.cli.fit`: as wide as ``COLUMNS`` or the
    terminal, unbounded on a pipe or with ``--wide`` (no cell is ever squeezed by Rich)."""
    from ibdtool.cli.fit import table_width

    width = None if wide else table_width()
    con = out()
    return PipeConsole(
        width=width or 10_000,
        highlight=False,
        soft_wrap=False,
        force_terminal=con.is_terminal,
        no_color=con.no_color,
    )


def fitted(
    title: str | None,
    cols: Sequence[Col],
    texts: Sequence[Sequence[str]],
    wide: bool = False,
    style: Callable[[int, str, str], Any] | None = None,
) -> Table:
    """A Rich table of ``texts`` (cell strings per row) with the columns that fit the terminal
    (:func:`ibdtool.cli.fit.fit_columns`), a caption naming the hidden ones; no cell is cut.
    ``style(row, key, text)`` may turn a cell into styled Rich text."""
    from ibdtool.cli.fit import fit_columns, table_width

    texts = [[shown(value) for value in row] for row in texts]  # measured as printed
    fit = fit_columns(cols, texts, None if wide else table_width(), wide)
    widths: list[int | None] = list(fit.widths) if fit.widths else [None] * len(fit.shown)
    return _fitted_table(title, cols, fit, widths, texts, 0, style, caption=True)


def _fitted_table(
    title: str | None,
    cols: Sequence[Col],
    fit: Any,
    widths: Sequence[int | None],
    texts: Sequence[Sequence[str]],
    first: int,
    style: Callable[[int, str, str], Any] | None,
    caption: bool,
    header: bool = True,
    fill_widths: Sequence[int | None] | None = None,
) -> Table:
    """The Rich table of :func:`fitted` for ``texts`` (rows ``first``… of the whole), with
    or without its header and caption; cells wrap at ``fill_widths`` (default ``widths``)."""
    from rich import box

    from ibdtool.cli.fit import fill

    t = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        title_justify="left",
        caption=fit.footer() if caption else None,
        caption_justify="left",
        caption_style="dim",
        show_header=header,
    )
    for i, name, w in zip(fit.shown, fit.titles, widths, strict=True):
        justify: Any = "right" if cols[i].numeric else "left"
        t.add_column(name, justify=justify, no_wrap=True, width=w)
    wraps = widths if fill_widths is None else fill_widths
    for n, row in enumerate(texts, first):
        cells: list[Any] = []
        for i, w in zip(fit.shown, wraps, strict=True):
            value = row[i]
            sep = cols[i].wrap
            if sep and w is not None:
                value = fill(value, w, sep)
            cells.append(style(n, cols[i].key, value) if style else value)
        t.add_row(*cells)
    return t


#: rows of a long table rendered at a time by :func:`print_fitted`
TABLE_CHUNK = 2000


def print_fitted(
    con: Console,
    title: str | None,
    cols: Sequence[Col],
    texts: Sequence[Sequence[str]],
    wide: bool = False,
    style: Callable[[int, str, str], Any] | None = None,
    chunk: int = TABLE_CHUNK,
) -> None:
    """``con.print(fitted(...))`` for a table of any length: Rich renders a whole table
    before writing it (millions of segments for 100,000 rows), so a long one is rendered
    ``chunk`` rows at a time with every column at the width the whole table gives it, and
    the pieces written as they would be in one table (header and top edge once, bottom edge
    and caption once). ``texts`` are the cells as :func:`ibdtool.present.shown` prints them."""
    from ibdtool.cli.fit import cell_len, fit_columns, table_width, widest_line

    fit = fit_columns(cols, texts, None if wide else table_width(), wide)
    given: list[int | None] = list(fit.widths) if fit.widths else [None] * len(fit.shown)
    if len(texts) <= chunk:
        con.print(_fitted_table(title, cols, fit, given, texts, 0, style, caption=True))
        return
    # Rich's natural width of a no_wrap column: its widest line, the title's included (each
    # distinct cell measured once: a column of 100,000 rows repeats most of its values)
    widths = [
        w if w is not None else max([cell_len(name), *map(widest_line, {r[i] for r in texts})])
        for i, name, w in zip(fit.shown, fit.titles, given, strict=True)
    ]

    def rich_rows(start: int, stop: int) -> None:
        first, last = start == 0, stop >= len(texts)
        table = _fitted_table(
            title if first else None,
            cols,
            fit,
            widths,
            texts[start:stop],
            start,
            style,
            caption=last,
            header=first,
            fill_widths=given,
        )
        with con.capture() as captured:
            con.print(table)
        lines = captured.get().split("\n")  # ends with "": the text ends with a newline
        if not last:
            del lines[-2]  # the bottom edge
        if not first:
            del lines[0]  # the top edge
        con.file.write("\n".join(lines))

    if con.is_terminal or any(w is not None for w in given):
        for start in range(0, len(texts), chunk):
            rich_rows(start, start + chunk)
    else:
        # a pipe or a file at natural widths: no colour, no wrapping, so a row is its cells
        # padded as Rich pads them; Rich draws the first row (title, header, top edge) and the
        # last (bottom edge, caption), and any row a plain line could not show as Rich would
        rich_rows(0, 1)
        plain = _PlainRows([(i, cols[i].numeric) for i in fit.shown], widths)
        for n in range(1, len(texts) - 1):
            line = plain.line(texts[n])
            if line is None:
                con.file.write(plain.flush())
                rich_rows(n, n + 1)
                continue
            plain.add(line)
            if plain.full(chunk):
                con.file.write(plain.flush())
        con.file.write(plain.flush())
        rich_rows(len(texts) - 1, len(texts))
    con.file.flush()


class _PlainRows:
    """The body rows of a :data:`box.SIMPLE_HEAD` table (``pad_edge=False``) as Rich writes
    them when it draws no colour and wraps nothing: an edge space, the cells justified to
    their columns' widths three spaces apart, an edge space. Rich's own measure of a cell
    (:func:`rich.cells.cell_len`) pads it; a cell Rich would treat otherwise (not printable,
    or wider than its column) is left to Rich (``line`` returns None)."""

    def __init__(self, shown: Sequence[tuple[int, bool]], widths: Sequence[int]) -> None:
        from rich.cells import cell_len as rich_len

        self._len = rich_len
        self._cols = [(i, numeric, w) for (i, numeric), w in zip(shown, widths, strict=True)]
        self._lines: list[str] = []

    def line(self, row: Sequence[str]) -> str | None:
        cells = []
        for i, numeric, width in self._cols:
            value = row[i]
            if not value.isprintable():
                return None
            # printable ASCII is one cell a character to Rich too
            pad = width - (len(value) if value.isascii() else self._len(value))
            if pad < 0:
                return None
            cells.append(" " * pad + value if numeric else value + " " * pad)
        return " " + "   ".join(cells) + " "

    def add(self, line: str) -> None:
        self._lines.append(line)

    def full(self, chunk: int) -> bool:
        return len(self._lines) >= chunk

    def flush(self) -> str:
        text = "".join(line + "\n" for line in self._lines)
        self._lines.clear()
        return text


def err() -> Console:
    global _err
    if _err is None:
        _err = SafeConsole(stderr=True, highlight=False)
    return _err


def progress_columns(byte_units: bool) -> list[Any]:
    """The columns every ibdtool bar shares: sizes in IEC units (MiB), a rate in MiB/s, and
    an ETA that says "unknown" until there is one."""
    from rich.progress import DownloadColumn, MofNCompleteColumn, ProgressColumn, Task

    class Rate(ProgressColumn):
        """Bytes per second in IEC units; ``task.fields["rate"]`` when the caller measures
        its own (bytes really moved, not the holes skipped)."""

        def render(self, task: Task) -> Text:
            rate = task.fields.get("rate")
            speed = rate if rate is not None else task.speed
            return Text(
                "?" if speed is None else f"{human_bytes(int(speed))}/s", "progress.data.speed"
            )

    class Eta(ProgressColumn):
        def render(self, task: Task) -> Text:
            # not task.finished: Rich never clears it, and a bar reused for the next phase
            # of the work (scan, copy, check) would say "done" all through it
            if task.total is not None and task.completed >= task.total:
                return Text("done", "progress.elapsed")
            left = task.time_remaining
            return Text("ETA unknown" if left is None else f"ETA {hms(left)}", "progress.remaining")

    count: list[Any] = (
        [DownloadColumn(binary_units=True), Rate()] if byte_units else [MofNCompleteColumn()]
    )
    return [*count, Eta()]


class RateMeter:
    """Bytes per second over the last few seconds, from cumulative counts."""

    WINDOW = 5.0

    def __init__(self) -> None:
        self.samples: list[tuple[float, int]] = []

    def add(self, moved: int, now: float | None = None) -> float | None:
        """Record ``moved`` bytes so far (at ``now``, monotonic seconds); the rate, or None
        while there is too little to tell."""
        import time

        now = time.monotonic() if now is None else now
        self.samples.append((now, moved))
        while len(self.samples) > 2 and now - self.samples[1][0] > self.WINDOW:
            self.samples.pop(0)
        (t0, m0), (t1, m1) = self.samples[0], self.samples[-1]
        return (m1 - m0) / (t1 - t0) if t1 - t0 >= 0.2 else None


def advance(progress: Any, task: Any, done: int, total: int | None, **fields: Any) -> None:
    """Move a bar to ``done`` of ``total``; a count that goes back is the next phase of the
    work starting over, so the bar is reset (its ETA and speed start afresh)."""
    current = next((t for t in progress.tasks if t.id == task), None)
    if current is not None and done < current.completed:
        progress.reset(task, total=total, completed=done, **fields)
        return
    progress.update(task, completed=done, total=total, **fields)


@contextmanager
def progress_for(
    label: str, enabled: bool = True, total: int | None = None, byte_units: bool = False
) -> Iterator[Callable[..., None] | None]:
    """A Rich progress callback on a terminal, else None.

    ``update(done, of=None, info=None, label=None, moved=None)``; ``info`` is shown after the bar
    (e.g. bytes sent), ``label`` replaces the description; ``byte_units`` shows sizes and a
    rate; ``moved`` (bytes really read or sent) is what the rate counts when ``done`` includes
    holes that cost nothing.
    """
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn

    meter = RateMeter()
    with Progress(
        TextColumn("{task.description}", style="progress.description", markup=False),
        BarColumn(),
        *progress_columns(byte_units),
        TextColumn("{task.fields[info]}", markup=False),
        console=err(),
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=total, info="", rate=None)

        def update(
            done: int,
            of: int | None = None,
            info: str | None = None,
            label: str | None = None,
            moved: int | None = None,
        ) -> None:
            fields: dict[str, Any] = {} if info is None else {"info": info}
            if label is not None:
                fields["description"] = label
            if moved is not None:
                fields["rate"] = meter.add(moved)
            advance(progress, task, done, of if of is not None else total, **fields)

        yield update


def print_inspect(r: InspectResult) -> None:
    """One block per file, as a DBA reads it top to bottom."""
    con = out()
    con.print(literal(r.path, style="bold underline"))
    con.print(inspect_grid(r))
    con.print()


MAP_ROWS = 16  # the most rows a terminal page map takes; more pages share a cell


def print_map(pm: PageMap) -> None:
    """The page map as coloured glyphs, as wide as the terminal, then its legend."""
    from ibdtool.cli.fit import table_width

    con = out()
    width = max(8, (table_width() or con.width) - 2)
    per_cell, rows = pm.cells(width, MAP_ROWS)
    unit = "1 cell = 1 page" if per_cell == 1 else f"1 cell = {per_cell:,} pages"
    con.print(literal(f"Page map by {pm.mode}", style="bold"))
    for row in rows:
        con.print(Text.assemble(*((c.glyph, c.color) for c in row)))
    for c in pm.legend():
        con.print(Text.assemble((c.glyph, c.color), f" {c.label} {c.pages:,}"))
    con.print(literal(unit, style="dim"))
    con.print()


def inspect_grid(r: InspectResult) -> Table:
    """The inspect summary as a two-column grid."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="cyan", no_wrap=True)
    grid.add_column()
    for name, value in inspect_rows(r):
        grid.add_row(name, Text.assemble(*value))
    return grid


def print_simulation(r: SimResult, wide: bool = False) -> None:
    """The simulate table (the columns that fit), then the recommendation lines."""
    from rich import box

    from ibdtool.cli.fit import Col

    con = out()
    con.print(literal(r.path, style="bold underline"))
    con.print(simulation_heading(r))
    rebuilt = rebuild_text(r)
    if rebuilt:
        con.print(rebuilt)
    current = current_state_text(r)
    if current:
        con.print(current)
    cols = [
        Col("algorithm", "algorithm", 0),
        Col("block", "block", 0, numeric=True),
        Col("predicted", "predicted", 0, numeric=True),
        Col("ci", "95% CI", 2, numeric=True, short="CI"),
        Col("saving", "saving", 1, numeric=True),
        Col("compress", "compress µs/page", 3, numeric=True, short="comp µs"),
        Col("decompress", "decompress µs/page", 4, numeric=True, short="decomp µs"),
        Col("extents", "extents", 5, numeric=True, short="ext."),
        Col("drop", "DROP after", 5, numeric=True, short="DROP"),
    ]
    texts = [
        [
            scenario_label(res.scenario),
            res.block.label,
            human_bytes(res.predicted),
            ci_text(res.ci95, res.predicted),
            f"{res.saving_pct:.1f}%",
            cost_text(res.compress),
            cost_text(res.decompress),
            "" if res.extents is None else f"{res.extents:,}",
            "" if res.drop_cost is None else seconds_text(res.drop_cost.seconds),
        ]
        for res in r.results
    ]

    def style(row: int, key: str, value: str) -> Any:
        if key == "saving":
            return literal(value, style="green" if r.results[row].saving_pct > 0 else "red")
        return value

    if texts:  # none with -a row (the ROW_FORMAT=COMPRESSED what-if alone)
        con.print(fitted(None, cols, texts, wide, style))
    note = cost_note(r)
    if note:
        con.print(literal(note, style="dim"))
    drop = drop_note(r)
    if drop:
        con.print(literal(drop, style="dim"))
    if any(x.scenario.server == "what-if" for x in r.results):
        con.print(
            Text("what-if rows are not an InnoDB option: they show the data's headroom", "dim")
        )
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
    for rec in recommendations(r):
        con.print(Text.assemble(*recommendation_text(rec, r.page_size)))
    for note in r.notes:
        con.print(literal(note, style="yellow"))
    con.print()


def write_simulation_csv(results: list[SimResult]) -> None:
    w = csv.writer(sys.stdout)
    w.writerow(
        [
            "path", "server", "algorithm", "level", "block_size", "ntfs_unit", "pages",
            "pages_sampled", "allocated_size", "predicted_allocated", "ci95_low", "ci95_high",
            "saving_pct", "compress_us_per_page", "decompress_us_per_page",
            "compress_us_q1", "compress_us_q3", "decompress_us_q1", "decompress_us_q3",
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
                    *_spread_cells(x.compress),
                    *_spread_cells(x.decompress),
                ]
            )  # fmt: skip


def _spread_cells(c: Cost | None) -> tuple[str, str]:
    """The spread (quartiles) of a CPU cost for CSV, empty when not measured."""
    return ("", "") if c is None else (f"{c.q1:.1f}", f"{c.q3:.1f}")
