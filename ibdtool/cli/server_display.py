"""Human output of ``ibdtool server`` and ``ibdtool migrate``: Rich grids, tables, a progress bar.

Data (status, table lists, plans, results) goes to stdout; talk (progress, what is happening)
goes to stderr, as a Rich bar on a terminal and as a plain line every few seconds elsewhere, the
way pt-online-schema-change logs ``Copying `db`.`t`:  45% 01:23 remain``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table
from rich.text import Text

from ibdtool.cli.render import err, literal, out, safe_text
from ibdtool.present import hms, human_bytes, range_text

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from ibdtool.parsers.vendor import Vendor
    from ibdtool.server import (
        Event,
        Plan,
        ServerStatus,
        SpaceInfo,
        TableInfo,
        TablePlan,
        TableResult,
    )

LINE_EVERY = 10.0  # seconds between progress lines when stderr is not a terminal


def _yes_no(value: bool | None, yes: str = "yes", no: str = "no") -> Text:
    if value is None:
        return Text("unknown", style="yellow")
    return literal(yes, style="green") if value else literal(no, style="red")


def _pct_saved(file_size: int | None, allocated: int | None) -> str:
    if not file_size or allocated is None:
        return ""
    pct = round(100 * (file_size - allocated) / file_size)
    return f"{pct}%" if pct else "0%"


# --- server status -----------------------------------------------------------------------------


def _fit_text(value: str | Text, width: int | None) -> str | Text:
    """``value`` broken into lines of at most ``width`` cells between words, a number never
    parted from its unit (:func:`ibdtool.cli.fit.line_breaks`); styles kept."""
    from ibdtool.cli.fit import line_breaks

    if width is None:
        return value

    text = safe_text(literal(value) if isinstance(value, str) else value)  # measured as printed
    lines = []
    pos = 0
    for end, start in line_breaks(text.plain, width):
        lines.append(text[pos:end])
        pos = start
    lines.append(text[pos:])
    return Text("\n").join(lines)


def print_status(st: ServerStatus, wide: bool = False) -> None:
    """The status as a grid of name and value; on a terminal the values wrap between words
    to fit it (a number stays with its unit); ``wide``: one line each."""
    from ibdtool.cli.fit import cell_len, table_width

    rows = _status_rows(st)
    width = None if wide else table_width()
    key_width = max(cell_len(k) for k, _ in rows)
    value_width = None if width is None else max(20, width - key_width - 2)
    g = Table.grid(padding=(0, 2))
    g.add_column(style="cyan", no_wrap=True)
    g.add_column(overflow="fold", no_wrap=width is None)  # fold: only a word wider than it all
    for key, value in rows:
        g.add_row(key, _fit_text(value, value_width))
    if width is None:
        from ibdtool.cli.render import table_console

        table_console(wide=True).print(g)
    else:
        out().print(g, width=width)


def _status_rows(st: ServerStatus) -> list[tuple[str, str | Text]]:
    rows: list[tuple[str, str | Text]] = []
    g = _Rows(rows)
    g.add_row("Server", f"{st.flavor} {st.version}  ({st.version_string})")
    g.add_row("Connection", st.connection + (f", TLS {st.tls_cipher}" if st.tls_cipher else ""))
    where = st.datadir_local or "not readable from here"
    g.add_row("Datadir", f"{st.datadir}  (local: {where})")
    g.add_row("Page size", f"{st.page_size // 1024}K")
    g.add_row("File per table", _yes_no(st.file_per_table, "ON", "OFF"))
    g.add_row("Checksums", st.checksum_algorithm or "?")
    if st.compression_algorithm is not None:
        g.add_row("Compression", f"{st.compression_algorithm}, level {st.compression_level}")
    elif st.compression_level is not None:
        g.add_row("Compression", f"level {st.compression_level} (innodb_compression_level)")
    codecs = Text()
    for i, (name, ok) in enumerate(st.codecs.items()):
        if i:
            codecs.append(" ")
        codecs.append(name, style="green" if ok else "red strike")
    g.add_row("Page codecs", codecs if st.codecs else Text("none", style="red"))
    if st.codec_plugins:
        g.add_row("Codec plugins", ", ".join(f"{k} {v}" for k, v in st.codec_plugins.items()))
    if st.read_only_compressed is not None:
        g.add_row("Read-only zip", _yes_no(st.read_only_compressed, "ON", "OFF"))
    punch = _yes_no(st.punch_hole).append(f"  ({st.punch_hole_source})", style="dim")
    g.add_row("Punch hole", punch)
    block = f"{human_bytes(st.fs_block_size)}" if st.fs_block_size else "unknown"
    fs = f"{st.filesystem}, " if st.filesystem else ""
    free = f", {human_bytes(st.free_bytes)} free" if st.free_bytes is not None else ""
    g.add_row("Filesystem", f"{fs}{block} blocks ({st.fs_block_source}){free}")
    pfs = _yes_no(st.performance_schema, "ON", "OFF")
    if st.performance_schema:
        pfs.append(
            "  events_stages_current " + ("on" if st.stage_consumer else "off (enabled per run)"),
            style="dim",
        )
    g.add_row("perf_schema", pfs)
    for w in st.warnings:
        g.add_row("Warning", literal(w, style="yellow"))
    return rows


class _Rows:
    """Collects ``add_row(name, value)`` calls (the grid is built once their widths are known)."""

    def __init__(self, rows: list[tuple[str, str | Text]]) -> None:
        self.rows = rows

    def add_row(self, key: str, value: str | Text) -> None:
        self.rows.append((key, value))


# --- tables -------------------------------------------------------------------------------------


def _table_note(t: TableInfo, vendor: Vendor) -> Text:
    if not t.innodb:
        return literal(f"ENGINE={t.engine}", style="dim")
    if t.shared_tablespace:
        return literal(f"in shared tablespace {t.shared_tablespace}", style="yellow")
    why = t.needs_rebuild(vendor)
    if why:
        return literal(why, style="bold yellow")
    lag = t.unflushed()
    if lag:
        return literal(lag, style="yellow")
    errors = [s.state_error for s in t.spaces if s.state_error]
    if errors:
        return literal(errors[0], style="red")
    if t.fulltext:
        return literal(t.fulltext_summary(), style="dim")
    return Text("")


def _k(n: int | None) -> str:
    return "" if not n else f"{n // 1024}K" if n % 1024 == 0 else str(n)


def _table(*columns: str, title: str | None = None) -> Table:
    """A plain table; ``>name`` is right-aligned; every column but the last never wraps."""
    tab = Table(box=box.SIMPLE_HEAD, pad_edge=False, title=title, title_justify="left")
    for i, col in enumerate(columns):
        last = i == len(columns) - 1
        right = col.startswith(">")
        tab.add_column(col.lstrip(">"), justify="right" if right else "left", no_wrap=not last)
    return tab


def _print_wide(tab: Table) -> None:
    """Tables are data: in a pipe, do not squeeze them into 80 columns."""
    con = out()
    if con.is_terminal:
        con.print(tab)
        return
    from ibdtool.cli.render import SafeConsole

    SafeConsole(highlight=False, soft_wrap=False, width=max(con.width, 240)).print(tab)


#: ``server tables`` columns, in their order; priority 0 is never dropped, higher goes first
TABLE_COLUMNS = (
    ("table", "table", 0, False, None, None),
    ("format", "format", 1, False, None, None),
    ("row_format", "row format", 6, False, "row fmt", None),
    ("file_size", "file size", 3, True, "size", None),
    ("allocated", "allocated", 1, True, "alloc", None),
    ("saved", "saved", 3, True, None, None),
    ("block", "block", 7, True, None, None),
    ("drop", "DROP", 4, True, None, None),
    ("pages", "pages on disk", 5, False, "pages", ", "),
    ("note", "note", 2, False, None, " "),
)


def _saved(t: TableInfo | SpaceInfo, unflushed: bool) -> str:
    """The share of the file not allocated, or ``?`` while the file lags the table (pages in
    the buffer pool only: a file with nothing written is not a 100% saving)."""
    if unflushed or (t.file_size and t.allocated_size == 0):
        return "?"
    return _pct_saved(t.file_size, t.allocated_size)


def _drop(cost: dict[str, Any] | None) -> str:
    """The predicted DROP TABLE time with its range (docs/cost.md)."""
    if not cost or cost.get("seconds") is None:
        return ""
    return range_text(cost["seconds"], cost.get("low"), cost.get("high"))


def print_tables(
    tables: list[TableInfo], others: list[SpaceInfo], vendor: Vendor, wide: bool = False
) -> None:
    """The tables fitted to the terminal (:mod:`ibdtool.cli.fit`): columns dropped by
    priority and named in a footer, numbers never cut; ``wide`` shows every column."""
    from ibdtool.cli.fit import Col
    from ibdtool.cli.render import fitted, table_console
    from ibdtool.server import space_kind

    cols = [
        Col(k, title, p, numeric, short, wrap)
        for k, title, p, numeric, short, wrap in TABLE_COLUMNS
    ]
    texts: list[list[str]] = []
    notes: list[Text | None] = []
    for t in tables:
        rf = t.options.row_format or ""
        if t.options.key_block_size:
            rf += f" KBS={t.options.key_block_size}"
        note = _table_note(t, vendor)
        texts.append(
            [
                t.name + (f" ({len(t.spaces)} parts)" if len(t.spaces) > 1 else ""),
                t.current_format(vendor) if t.innodb else "-",
                rf,
                human_bytes(t.file_size) if t.file_size is not None else "",
                human_bytes(t.allocated_size) if t.allocated_size is not None else "",
                _saved(t, bool(t.innodb and t.unflushed())),
                _k(t.fs_block_size),
                _drop(t.drop_cost),
                t.page_summary() or "",
                note.plain,
            ]
        )
        notes.append(note)
        if len(t.spaces) > 1:  # the partitions, under their table
            for sp in t.spaces:
                texts.append(
                    [
                        f"  partition {sp.partition or sp.name}",
                        "",
                        "",
                        human_bytes(sp.file_size) if sp.file_size is not None else "",
                        human_bytes(sp.allocated_size) if sp.allocated_size is not None else "",
                        _saved(sp, False),
                        "",
                        _drop(
                            sp.state.drop_cost.to_json()
                            if sp.state and sp.state.drop_cost
                            else None
                        ),
                        sp.state.summary() if sp.state else "",
                        sp.state_error or "",
                    ]
                )
                notes.append(None)
    for sp in others:
        texts.append(
            [
                sp.name,
                space_kind(sp),
                sp.row_format or "",
                human_bytes(sp.file_size) if sp.file_size is not None else "",
                human_bytes(sp.allocated_size) if sp.allocated_size is not None else "",
                _saved(sp, False),
                _k(sp.fs_block_size),
                _drop(sp.state.drop_cost.to_json() if sp.state and sp.state.drop_cost else None),
                sp.state.summary() if sp.state else "",
                "",
            ]
        )
        notes.append(None)

    def style(row: int, key: str, text: str) -> Any:
        note = notes[row]
        if note is None:
            return Text(text, style="dim") if key in ("table", "format") else text
        if key == "note" and note.style:
            return Text(text, style=note.style)
        return text

    table_console(wide).print(fitted(None, cols, texts, wide, style))


# --- the plan -----------------------------------------------------------------------------------


def _plan_table(tp: TablePlan, vendor: Vendor) -> None:
    con = out()
    t = tp.table
    head = literal(t.name, style="bold")
    head.append(f"  {t.current_format(vendor) if t.innodb else '-'} → {tp.target.label}  ")
    style = {"convert": "green", "skip": "dim", "refuse": "bold red"}[tp.action]
    head.append({"convert": "convert", "skip": "skip", "refuse": "REFUSED"}[tp.action], style=style)
    con.print(head)
    facts = []
    if t.file_size is not None:
        facts.append(f"{human_bytes(t.file_size)} file, {human_bytes(t.allocated_size)} allocated")
    summary = t.page_summary()
    if summary:
        facts.append(f"pages: {summary}")
    if facts:
        con.print("  " + "; ".join(facts), style="dim")
    if tp.skip_reason:
        con.print(f"  {tp.skip_reason}", style="dim", soft_wrap=True)
    for c in tp.checks:
        if c.severity == "info":
            con.print(literal(f"  · {c.message}", style="dim"), soft_wrap=True)
        elif c.severity == "warning":
            con.print(literal(f"  ! {c.message}", style="yellow"), soft_wrap=True)
        else:
            con.print(literal(f"  ✗ {c.message}", style="red"), soft_wrap=True)
    if tp.prediction:
        p = tp.prediction
        ci = ""
        if p.ci95:
            ci = f" (95% CI {human_bytes(p.ci95[0])}–{human_bytes(p.ci95[1])})"
        change = (
            f"saves {p.saving_pct:.0f}%" if p.saving_pct >= 0 else f"grows {-p.saving_pct:.0f}%"
        )
        con.print(
            Text.assemble(
                f"  predicted: {human_bytes(p.predicted)} allocated{ci}, {change} against "
                f"{human_bytes(p.allocated_now)} now ",
                (f"({p.how})", "dim"),
            ),
            soft_wrap=True,
        )
        alone, freed = p.rebuild_alone, p.rebuild_saving
        if alone is not None and freed is not None:
            con.print(
                literal(
                    f"  rebuild alone (no compression): {human_bytes(round(alone.value))} "
                    f"(95% CI {human_bytes(round(alone.low))}–{human_bytes(round(alone.high))}), "
                    f"frees {human_bytes(round(freed.value))} of the table's history",
                    style="dim",
                ),
                soft_wrap=True,
            )
    elif tp.prediction_note and tp.action == "convert":
        con.print(literal(f"  no prediction: {tp.prediction_note}", style="dim"), soft_wrap=True)
    _decision(tp)
    if tp.action == "convert":
        for step in tp.steps:
            line = Text("  " + step.display, style="bold" if step.kind == "rebuild" else "")
            if step.kind == "set_global":
                line.append("   -- restored afterwards", style="dim")
            con.print(line, soft_wrap=True)
            if step.kind in ("attribute", "rebuild"):
                for lk in step.locks(tp.settings.lock_wait_timeout if tp.settings else 60):
                    con.print(literal(f"    lock: {lk.text}", style="dim"), soft_wrap=True)
        for lk in tp.verify_locks():
            con.print(literal(f"  then, to verify — lock: {lk.text}", style="dim"), soft_wrap=True)
    con.print()


def _decision(tp: TablePlan) -> None:
    """The chosen target beside the other ways to store the table, and the probe's lines."""
    columns, rows, lines = tp.options_view()
    if rows:
        tab = _table(*columns)
        for row in rows:
            tab.add_row(*[literal(c, style="bold" if row[0].startswith("→") else "") for c in row])
        from rich.padding import Padding

        out().print(Padding(tab, (0, 0, 0, 2), expand=False))
    for line in lines:
        out().print(literal(f"  {line}", style="dim"), soft_wrap=True)


def print_plan(plan: Plan, executing: bool) -> None:
    con = out()
    con.print(
        Text.assemble(
            (plan.server, "bold"), f": {len(plan.tables)} table(s) to {plan.target.label}"
        )
    )
    for c in plan.checks:
        style = {"error": "red", "warning": "yellow"}.get(c.severity, "dim")
        con.print(literal(f"{'✗' if c.refuses else '!'} {c.message}", style=style), soft_wrap=True)
    for note in plan.notes:
        con.print(literal(f"! {note}", style="yellow"), soft_wrap=True)
    con.print()
    for tp in plan.tables:
        _plan_table(tp, plan.vendor)
    if not executing:
        n = len(plan.runnable)
        con.print(
            literal(
                f"dry run: nothing was changed. {n} table(s) would be converted; "
                "add --execute to run the statements.",
                style="dim",
            ),
            soft_wrap=True,
        )


# --- progress -----------------------------------------------------------------------------------


class ProgressView:
    """Renders :class:`Event` objects on stderr: a Rich bar on a terminal, else lines."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._last_line = 0.0

    def __enter__(self) -> ProgressView:
        if self.tty:
            from rich.progress import (
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[eta]}", markup=False),
                TextColumn("{task.fields[detail]}", style="dim", markup=False),
                console=err(),
                transient=True,
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)
            self._progress = None

    def say(self, text: str | Text) -> None:
        if self._progress is not None:
            self._progress.console.print(text)
        else:
            err().print(text, soft_wrap=True)

    def show(self, ev: Event) -> None:
        k = ev.kind
        if k == "progress":
            self._on_progress(ev)
            return
        if k == "statement_start":
            self._stop_task()
            self.say(literal(f"{ev.table}: {ev.sql}", style="bold"))
            self._start_task(ev)
            return
        self._stop_task()
        if k == "statement_done":
            note = f" ({ev.message})" if ev.message else ""
            self.say(literal(f"{ev.table}: done in {hms(ev.elapsed)}{note}", style="green"))
        elif k in ("table_failed", "table_interrupted", "table_refused", "restore_failed"):
            self.say(
                literal(f"{ev.table or 'batch'}: {k.split('_')[-1]}: {ev.message}", style="red")
            )
        elif k == "table_done" and ev.data.get("status") == "awaiting_flush":
            hint = ev.data["result"].get("hint") or ""
            self.say(literal(f"{ev.table}: awaiting flush: {ev.message}; {hint}", style="yellow"))
        elif k == "table_done":
            self.say(literal(f"{ev.table}: {ev.message}", style="green"))
        elif k in ("throttled",):
            self.say(literal(f"{ev.table}: throttled: {ev.message}", style="yellow"))
        elif k in ("batch_done",):
            if ev.message.startswith("interrupted"):  # the counts the summary below shows
                self.say(Text(f"batch {ev.message}", style="yellow"))
            return
        elif ev.message:
            prefix = f"{ev.table}: " if ev.table else ""
            self.say(literal(prefix + ev.message, style="dim" if k != "killing" else "yellow"))

    def _start_task(self, ev: Event) -> None:
        self._stop_task()
        if self._progress is not None:
            self._task = self._progress.add_task(str(ev.table), total=100.0, eta="", detail="")

    def _stop_task(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.remove_task(self._task)
            self._task = None

    def _on_progress(self, ev: Event) -> None:
        frac = ev.fraction or 0.0
        eta, detail = ev.eta_text, ev.detail_text
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=100.0 * frac, eta=eta, detail=detail)
            return
        now = time.monotonic()
        if now - self._last_line >= LINE_EVERY:
            self._last_line = now
            err().print(
                f"{ev.table}: {100 * frac:3.0f}% {hms(ev.elapsed)} elapsed, {eta}  {detail}",
                soft_wrap=True,
                highlight=False,
            )


# --- results -------------------------------------------------------------------------------------


def print_results(results: list[TableResult]) -> None:
    tab = _table(
        "table", "status", ">time", ">file size", ">allocated", ">saved", "pages on disk",
        title="Results",
    )  # fmt: skip
    for r in results:
        style = {"done": "green", "skipped": "dim", "awaiting_flush": "yellow"}.get(r.status, "red")
        if r.status == "done" and r.verified is not True:
            style = "yellow"
        b, a = r.before, r.after

        def arrow(attr: str, b: Any = b, a: Any = a) -> str:
            x = getattr(b, attr) if b else None
            y = getattr(a, attr) if a else None
            if x is None:
                return ""
            return human_bytes(x) + (f" → {human_bytes(y)}" if y is not None else "")

        saved = ""
        if r.unflushed_pages:
            saved = "? (not flushed)"  # the file lags the table: its size is not a saving
        elif b and a and b.allocated_size and a.allocated_size is not None:
            saved = f"{100 * (b.allocated_size - a.allocated_size) / b.allocated_size:.0f}%"
        tab.add_row(
            r.table,
            literal(r.status, style=style),
            hms(r.seconds) if r.statements else "",
            arrow("file_size"),
            arrow("allocated_size"),
            saved,
            literal(r.message, style="" if r.ok else style),
        )
    _print_wide(tab)
    waiting = [r.table for r in results if r.status == "awaiting_flush"]
    if waiting:
        hint = next(r.hint for r in results if r.status == "awaiting_flush")
        out().print(
            literal(f"awaiting flush: {', '.join(waiting)}: {hint}", style="yellow"), soft_wrap=True
        )
    for r in results:
        if r.status not in ("done", "awaiting_flush", "failed", "interrupted"):
            continue
        for s in r.statements:
            mark = "✗" if s.error else " "
            out().print(f"  {mark} {hms(s.seconds):>7}  {r.table}  {s.sql}", soft_wrap=True)


# --- the workload probe -----------------------------------------------------------------------

PROBE_ROWS = (
    ("point", "point reads (first + repeat)"),
    ("first", "first read of a key"),
    ("repeat", "repeat of a key (warm)"),
    ("cold", "cold: pool read from disk"),
    ("warm", "warm: no disk read"),
    ("range", "range reads"),
)


def _ms(x: float | None) -> str:
    return "" if x is None else f"{1000 * x:.2f}"


def _change(a: float | None, b: float | None) -> str:
    return "" if not a or b is None else f"{b / a:.2f}×"


def print_probe(results: list[Any]) -> None:
    """One probe (a table's latencies now), or two side by side (before and after a
    conversion): p50/p95/p99 in ms, rows a second, and the files' allocated bytes."""
    con = out()
    first = results[0]
    cols = ["reads", ">n"]
    for r in results:
        cols += [f">{r.when} p50 ms", ">p95", ">p99", ">rows/s"]
    if len(results) == 2:
        cols += [">p50 after/before", ">p99 after/before"]
    con.print(literal(f"probe of {first.table}", style="bold"))
    tab = _table(*cols)
    lats = [r.latencies() for r in results]
    for key, label in PROBE_ROWS:
        if not any(lat[key].n for lat in lats):
            continue
        row = [label, " / ".join(str(lat[key].n) for lat in lats)]
        for lat in lats:
            x = lat[key]
            row += [
                _ms(x.p50),
                _ms(x.p95),
                _ms(x.p99),
                "" if x.rows_per_s is None else f"{x.rows_per_s:,.0f}",
            ]
        if len(results) == 2:
            a, b = lats[0][key], lats[1][key]
            row += [_change(a.p50, b.p50), _change(a.p99, b.p99)]
        tab.add_row(*[literal(c) for c in row])
    _print_wide(tab)
    for r in results:
        alloc = "" if r.allocated_size is None else f", {human_bytes(r.allocated_size)} allocated"
        used = "" if r.share_used is None else f", busy {100 * r.share_used:.1f}% of the time"
        srv = r.latencies()["point"]
        server = (
            f"; performance_schema timed {srv.server_n}: p50 {_ms(srv.server_p50)} ms, "
            f"p95 {_ms(srv.server_p95)} ms"
            if srv.server_n
            else ""
        )
        con.print(
            literal(
                f"{r.when}: {r.format or '?'}{alloc}; {len(r.reads)} statements in "
                f"{r.seconds:.1f}s{used}{server}",
                style="dim",
            ),
            soft_wrap=True,
        )
        pool = (r.window or {}).get("pool") or {}
        if pool.get("read_requests") is not None:
            con.print(
                literal(
                    f"  buffer pool over the window (server-wide): {pool['read_requests']:,} "
                    f"page requests, {pool['disk_reads']:,} from disk",
                    style="dim",
                ),
                soft_wrap=True,
            )
        inpool = pool.get("table_pages_in_pool") or {}
        if inpool.get("before") is not None and inpool.get("table_pages"):
            con.print(
                literal(
                    f"  the table's pages in the buffer pool: {inpool['before']:,} of "
                    f"{inpool['table_pages']:,} before the probe, {inpool['after']:,} after",
                    style="dim",
                ),
                soft_wrap=True,
            )
        fio = (r.window or {}).get("file_io") or {}
        if fio.get("read_count") is not None and fio.get("files"):
            con.print(
                literal(
                    f"  the table's files: {fio['read_count']:,} reads, "
                    f"{human_bytes(int(fio.get('bytes_read') or 0))} (performance_schema)",
                    style="dim",
                ),
                soft_wrap=True,
            )
        if r.stopped:
            con.print(literal(f"  stopped: {r.stopped}", style="yellow"), soft_wrap=True)
        for note in r.notes:
            con.print(literal(f"  {note}", style="dim"), soft_wrap=True)
    if len(results) == 2 and results[0].allocated_size and results[1].allocated_size is not None:
        a, b = results[0].allocated_size, results[1].allocated_size
        con.print(
            f"allocated {human_bytes(a)} → {human_bytes(b)}: "
            f"{human_bytes(a - b)} saved ({100 * (a - b) / a:.0f}%)",
            soft_wrap=True,
        )
    con.print(
        literal(
            "a probe is not the workload: a few key lookups and short scans, one at a time "
            "(docs/cost.md)",
            style="dim",
        ),
        soft_wrap=True,
    )
