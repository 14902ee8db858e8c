"""Writers for ``ibdtool report``: a Rich table, JSON, JSON lines, CSV, Markdown and HTML.

Every writer takes the report document of :func:`ibdtool.report.batch.document` (JSON lines take
rows one at a time, as files finish). The HTML page is self-contained: inline CSS, a small script
that sorts the tables, and an inline SVG chart of logical against allocated size per schema;
it loads nothing from anywhere.
"""

from __future__ import annotations

import csv
import html
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from ibdtool.cli import indented_json
from ibdtool.parsers.filename import table_label
from ibdtool.present import human_bytes, range_text, shown

SYSTEM_LABEL = "(server)"  # rows with no schema: system, undo and general tablespaces


def schema_label(schema: str | None) -> str:
    return SYSTEM_LABEL if schema is None else schema


def tablespace_label(row: dict[str, Any]) -> str:
    """``schema.table`` (with the partition), or the file name for server-level files."""
    fts = row.get("fulltext")
    if fts:  # a FULLTEXT index's auxiliary tablespace, named after its table
        table = row.get("table") or f"(table id {fts['table_id']})"
        return f"{schema_label(row.get('schema'))}.{table} FULLTEXT {fts['part']}"
    if row.get("table") is None:
        return row.get("name") or row["path"]
    return table_label(schema_label(row.get("schema")), row["table"], row.get("partition"))


def compression_text(row: dict[str, Any]) -> str:
    """Page-compression algorithms found and their share of the file's pages."""
    counts = dict(row.get("compression") or {})
    pages = row.get("pages") or 0
    kbs = row.get("key_block_size")
    if kbs and "none" in counts:  # ROW_FORMAT=COMPRESSED: every page is a zip page
        counts[f"zip {kbs // 1024}K"] = counts.pop("none")
    parts = [
        f"{algo} {100 * n / pages:.0f}%"
        for algo, n in sorted(counts.items(), key=lambda kv: -kv[1])
        if algo != "none" and pages
    ]
    if kbs and len(parts) == 1:
        return parts[0].rsplit(" ", 1)[0]  # "zip 8K", not "zip 8K 100%"
    return " + ".join(parts) if parts else ("none" if counts else "")


def row_format_text(row: dict[str, Any]) -> str:
    fmt = row.get("row_format") or ""
    kbs = row.get("key_block_size")
    return f"{fmt} {kbs // 1024}K".strip() if kbs else fmt


def sdi_note(row: dict[str, Any]) -> str:
    """The SDI's own name for the table when it differs from the path's."""
    sdi = row.get("sdi")
    if not sdi or not sdi.get("table") or row.get("fulltext"):
        return ""
    if (sdi.get("schema"), sdi.get("table")) == (row.get("schema"), row.get("table")):
        return ""
    return f"SDI: {sdi.get('schema')}.{sdi.get('table')}"


_SHORT_FORMATS = {
    "MariaDB 10.4+ full_crc32": "MariaDB fcrc32",
    "MariaDB classic (page_compressed)": "MariaDB classic",
    "MySQL 5.x or MariaDB classic": "MySQL 5/MariaDB",
}


def short_format(row: dict[str, Any]) -> str:
    """``format`` in a few words for narrow tables: ``MySQL 8 (8.0.15)`` → ``MySQL 8.0.15``."""
    name = row.get("format") or ""
    if name.startswith("MySQL 8 (") and name.endswith(")"):
        return "MySQL " + name[len("MySQL 8 (") : -1]
    return _SHORT_FORMATS.get(name, name)


def _pct(n: float | None) -> str:
    """A share in whole percent; a rounding of zero is "0%", never "-0%"."""
    return "" if n is None else f"{round(n) or 0:.0f}%"


def _signed_bytes(n: int | None) -> str:
    if not n:
        return "0"
    return ("+" if n > 0 else "−") + human_bytes(abs(n))


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _count(n: int | None) -> str:
    return "" if n is None else f"{n:,}"


# --- the columns every tabular format shares ----------------------------------------------------

#: (key, title, numeric, text of a row's cell, raw value for sorting / CSV)
Column = tuple[str, str, bool, Callable[[dict[str, Any]], str], Callable[[dict[str, Any]], Any]]


def _get(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda r: r.get(key)


def _checksum_invalid(r: dict[str, Any]) -> int | None:
    return (r.get("checksum") or {}).get("invalid") if not r.get("error") else None


def _best(r: dict[str, Any]) -> Any:
    return (r.get("simulation") or {}).get("predicted_allocated")


def _best_text(r: dict[str, Any]) -> str:
    sim = r.get("simulation") or {}
    if sim.get("predicted_allocated") is None:
        return "n/a" if sim else ""  # why: the row's simulation.note
    return f"{human_bytes(sim['predicted_allocated'])} {sim['best']}"


def _drop_text(r: dict[str, Any]) -> str:
    """The predicted DROP time and its range (a row, or a schema's sum: DROP DATABASE)."""
    if r.get("drop_seconds") is None or r.get("error"):
        return ""
    return range_text(r["drop_seconds"], r.get("drop_low"), r.get("drop_high"))


def _flags_text(r: dict[str, Any]) -> str:
    return r["error"] if r.get("error") else ", ".join(r.get("flags", ()))


COLUMNS: list[Column] = [
    ("tablespace", "Tablespace", False, tablespace_label, tablespace_label),
    ("format", "Format", False, short_format, short_format),
    ("row_format", "Row format", False, row_format_text, row_format_text),
    ("compression", "Compression", False, compression_text, compression_text),
    ("logical_size", "Logical", True, lambda r: human_bytes(r.get("logical_size")),
     _get("logical_size")),
    ("allocated_size", "Allocated", True, lambda r: human_bytes(r.get("allocated_size")),
     _get("allocated_size")),
    ("saving_pct", "Saved", True, lambda r: _pct(r.get("saving_pct")), _get("saving_pct")),
    ("extents", "Extents", True, lambda r: _count(r.get("extents")), _get("extents")),
    ("drop_seconds", "DROP", True, lambda r: _drop_text(r), _get("drop_seconds")),
    ("unpunched_pages", "Unpunched", True, lambda r: _count(r.get("unpunched_pages")),
     _get("unpunched_pages")),
    ("checksum_invalid", "Bad pages", True, lambda r: _count(_checksum_invalid(r)),
     _checksum_invalid),
    ("flags", "Flags", False, _flags_text, _flags_text),
]  # fmt: skip
SIM_COLUMN: Column = ("predicted_allocated", "Best predicted", True, _best_text, _best)

#: (key, title, numeric, text, raw) for the per-schema totals
SCHEMA_COLUMNS: list[Column] = [
    ("schema", "Schema", False, lambda t: schema_label(t["schema"]),
     lambda t: schema_label(t["schema"])),
    ("files", "Files", True, lambda t: _count(t["files"]), _get("files")),
    ("logical_size", "Logical", True, lambda t: human_bytes(t["logical_size"]),
     _get("logical_size")),
    ("allocated_size", "Allocated", True, lambda t: human_bytes(t["allocated_size"]),
     _get("allocated_size")),
    ("saving_pct", "Saved", True, lambda t: _pct(t["saving_pct"]), _get("saving_pct")),
    ("extents", "Extents", True, lambda t: _count(t["extents"]), _get("extents")),
    ("drop_seconds", "DROP DATABASE", True, lambda t: _drop_text(t), _get("drop_seconds")),
    ("checksum_invalid", "Bad pages", True, lambda t: _count(t["checksum_invalid"]),
     _get("checksum_invalid")),
    ("flagged", "Flags", False,
     lambda t: ", ".join(f"{k} {v}" for k, v in t["flags"].items() if v),
     lambda t: ", ".join(f"{k} {v}" for k, v in t["flags"].items() if v)),
]  # fmt: skip


def _schema_best(t: dict[str, Any]) -> Any:
    sim = t.get("simulation") or {}
    return sim["predicted_allocated"] if sim.get("files") else None


SIM_SCHEMA_COLUMN: Column = (
    "predicted_allocated",
    "Best predicted",
    True,
    lambda t: "" if _schema_best(t) is None else human_bytes(_schema_best(t)),
    _schema_best,
)


def _simulated(doc: dict[str, Any]) -> bool:
    return bool(doc.get("options", {}).get("simulate"))


def fleet(doc: dict[str, Any]) -> bool:
    """A report of ``host:path`` arguments: rows and schemas name their host."""
    return "by_host" in doc["totals"]


HOST_COLUMN: Column = ("host", "Host", False, _get("host"), _get("host"))


def row_columns(doc: dict[str, Any]) -> list[Column]:
    return row_columns_for(_simulated(doc), fleet(doc))


def row_columns_for(simulated: bool, hosts: bool) -> list[Column]:
    """:func:`row_columns` of a report with ``--simulate`` (``simulated``) or of hosts."""
    cols = [*COLUMNS, SIM_COLUMN] if simulated else COLUMNS
    return [HOST_COLUMN, *cols] if hosts else cols


def schema_columns(doc: dict[str, Any]) -> list[Column]:
    cols = [*SCHEMA_COLUMNS, SIM_SCHEMA_COLUMN] if _simulated(doc) else SCHEMA_COLUMNS
    return [HOST_COLUMN, *cols] if fleet(doc) else cols


def _host_problem(t: dict[str, Any]) -> str:
    if t.get("host_error"):
        return str(t["host_error"])
    return ", ".join(f"{k} {v}" for k, v in t["flags"].items() if v)


#: the per-host totals of a fleet report
HOST_COLUMNS: list[Column] = [
    HOST_COLUMN,
    *SCHEMA_COLUMNS[1:-1],
    ("flagged", "Flags", False, _host_problem, _host_problem),
]


def change_text(c: dict[str, Any]) -> str:
    """What changed in one record, in words."""
    parts = [f"{k} {v['old']} → {v['new']}" for k, v in c.get("fields", {}).items()]
    parts += [f"+{f}" for f in c.get("flags_added", ())]
    parts += [f"−{f}" for f in c.get("flags_removed", ())]
    return "; ".join(parts)


def headline(doc: dict[str, Any]) -> str:
    t = doc["totals"]["all"]
    hosts = doc["totals"].get("by_host")
    text = ""
    if hosts is not None:
        failed = sum(1 for h in hosts if h.get("host_error"))
        text = _plural(len(hosts), "host") + (f" ({failed} failed)" if failed else "") + ": "
    text += (
        f"{_plural(t['files'], 'tablespace')}, {human_bytes(t['logical_size'])} logical, "
        f"{human_bytes(t['allocated_size'])} allocated ({t['saving_pct']:.0f}% saved), "
        f"{_plural(t['checksum_invalid'], 'bad page')}, {t['errors']:,} unreadable"
    )
    sim = t.get("simulation")
    if sim and sim["files"]:
        text += (
            f"; the best page compression would allocate "
            f"{human_bytes(sim['predicted_allocated'])} for the "
            f"{_plural(sim['files'], 'simulated table')} "
            f"(now {human_bytes(sim['allocated_size'])}), as rebuilt"
        )
        if sim.get("rebuild_saving"):
            text += (
                f"; the rebuild alone (no compression) would free "
                f"{human_bytes(sim['rebuild_saving'])} of their history"
            )
    return text


# --- JSON and JSON lines ---------------------------------------------------------------------


#: stands for the rows while the rest of a document is encoded (JSON escapes the NULs)
_ROWS_MARK = "\0ibdtool rows\0"


def json_row_text(row: dict[str, Any]) -> str:
    """A row's text in the ``--format json`` document: json's ``indent=2`` encoding, every
    line after the first four spaces further in (rows sit two levels deep), through the faster
    encoder (:mod:`ibdtool.cli.indented_json`)."""
    return indented_json.dumps(row, 2)


def write_json(doc: dict[str, Any], out: IO[str]) -> None:
    """``json.dump(doc, indent=2)``; rows that are not a list (a packed
    :class:`~ibdtool.report.RowStore`) are encoded and written one at a time, to the same
    text (a store that keeps :func:`json_row_text` of its rows gives them as they are)."""
    rows = doc.get("tablespaces")
    if isinstance(rows, list) or rows is None:
        json.dump(doc, out, indent=2, default=str)
        out.write("\n")
        return
    text = json.dumps({**doc, "tablespaces": _ROWS_MARK}, indent=2, default=str)
    head, tail = text.split(json.dumps(_ROWS_MARK), 1)
    out.write(head)
    texts = (
        rows.texts() if getattr(rows, "text", None) is json_row_text else map(json_row_text, rows)
    )
    sep = "[\n    "
    for row_text in texts:
        out.write(sep)
        out.write(row_text)
        sep = ",\n    "
    out.write("[]" if sep.startswith("[") else "\n  ]")
    out.write(tail)
    out.write("\n")


def write_jsonl_row(row: dict[str, Any], out: IO[str]) -> None:
    out.write(json.dumps(row, default=str, separators=(",", ":")) + "\n")
    out.flush()


# --- CSV -------------------------------------------------------------------------------------

CSV_FIELDS = (
    "name", "path", "schema", "table", "partition", "kind", "vendor", "format", "row_format",
    "key_block_size", "page_compression", "declared_compression", "compression", "pages",
    "compressed_pages", "uncompressed_share", "logical_size", "allocated_size", "saving",
    "saving_pct", "fs_block_size", "extents", "extents_per_gib", "drop_seconds", "drop_low",
    "drop_high", "mean_extent_bytes", "scan_layout_factor", "extents_per_saved_mib",
    "unpunched_pages", "unpunched_bytes", "checksum_valid", "checksum_invalid", "flags", "error",
)  # fmt: skip
CSV_SIM_FIELDS = ("best_algorithm", "predicted_allocated", "predicted_saving")
CSV_CHANGE_FIELDS = ("change", "logical_size_delta", "allocated_size_delta", "what_changed")


def csv_record(row: dict[str, Any]) -> dict[str, Any]:
    rec = {k: row.get(k) for k in CSV_FIELDS}
    rec["host"] = row.get("host")  # written only by a fleet report (report host:path)
    rec["compression"] = ";".join(f"{k}:{v}" for k, v in (row.get("compression") or {}).items())
    chk = row.get("checksum") or {}
    rec["checksum_valid"] = chk.get("valid")
    rec["checksum_invalid"] = chk.get("invalid")
    rec["flags"] = ";".join(row.get("flags", ()))
    sim = row.get("simulation") or {}
    rec["best_algorithm"] = sim.get("best")
    rec["predicted_allocated"] = sim.get("predicted_allocated")
    rec["predicted_saving"] = sim.get("saving")
    return rec


class _SafeCsv(csv.DictWriter):
    """CSV with every text cell passed through :func:`ibdtool.text.shown` (names from files and
    servers end up on terminals through ``cat`` too; the JSON report carries them exactly)."""

    def writerow(self, rowdict: Any) -> Any:
        safe = {k: shown(v) if isinstance(v, str) else v for k, v in rowdict.items()}
        return super().writerow(safe)


def write_csv(doc: dict[str, Any], out: IO[str]) -> None:
    """One line per tablespace; with ``--compare``, its change, and dropped ones at the end."""
    from ibdtool.report import match_keys

    fields = list(CSV_FIELDS)
    if fleet(doc):
        fields = ["host", *fields, "files"]
    if _simulated(doc):
        fields += CSV_SIM_FIELDS
    compare = doc.get("compare")
    if compare:
        fields += CSV_CHANGE_FIELDS
    writer = _SafeCsv(out, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    rows = doc["tablespaces"]
    changes = {c["key"]: c for c in compare["changes"]} if compare else {}
    for key, row in zip(match_keys(rows), rows, strict=True):
        rec = csv_record(row)
        if compare:
            c = changes.get(key)
            rec["change"] = c["status"] if c else "unchanged"
            rec["logical_size_delta"] = c["logical_size"]["delta"] if c else 0
            rec["allocated_size_delta"] = c["allocated_size"]["delta"] if c else 0
            rec["what_changed"] = change_text(c) if c else ""
        writer.writerow(rec)
    for c in compare["changes"] if compare else ():
        if c["status"] == "dropped":
            writer.writerow(
                {
                    "name": c["name"],
                    "path": c["path"],
                    "schema": c["schema"],
                    "table": c["table"],
                    "change": "dropped",
                    "logical_size_delta": c["logical_size"]["delta"],
                    "allocated_size_delta": c["allocated_size"]["delta"],
                    **({"host": c.get("host")} if fleet(doc) else {}),
                }
            )
    if fleet(doc):
        for t in [*doc["totals"]["by_host"], doc["totals"]["all"]]:
            writer.writerow(csv_total(t))


#: CSV columns a fleet report's total lines fill (the others stay empty)
CSV_TOTAL_FIELDS = (
    "files", "pages", "compressed_pages", "logical_size", "allocated_size", "saving",
    "saving_pct", "extents", "unpunched_pages", "unpunched_bytes",
)  # fmt: skip


def csv_total(t: dict[str, Any]) -> dict[str, Any]:
    """A fleet report's total as a CSV line: ``kind`` ``host_total`` (``host`` set; ``error``
    when the host failed) or ``fleet_total``."""
    host = t.get("host")
    rec = {k: t.get(k) for k in CSV_TOTAL_FIELDS}
    rec.update(
        host=host,
        name="(host total)" if host else "(fleet total)",
        kind="host_total" if host else "fleet_total",
        checksum_invalid=t.get("checksum_invalid"),
        flags=";".join(k for k, v in t.get("flags", {}).items() if v),
        error=t.get("host_error"),
    )
    return rec


# --- Markdown --------------------------------------------------------------------------------


def _md(text: str) -> str:
    return shown(text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " "))


def _md_table(columns: list[Column], items: Iterable[dict[str, Any]]) -> Iterator[str]:
    yield "| " + " | ".join(c[1] for c in columns) + " |"
    yield "|" + "|".join("---:" if c[2] else "---" for c in columns) + "|"
    for it in items:
        yield "| " + " | ".join(_md(c[3](it)) for c in columns) + " |"


def write_markdown(doc: dict[str, Any], out: IO[str]) -> None:
    """The report as Markdown, written a line at a time (the rows are not held as text)."""
    lines: Iterable[str] = [
        f"# InnoDB tablespaces on {doc.get('host', '?')}",
        "",
        f"Generated {doc.get('generated_at')} by ibdtool {doc.get('ibdtool_version')} "
        f"from {', '.join(f'`{p}`' for p in doc.get('paths', []))}.",
        "",
        headline(doc) + ".",
        "",
        *(
            ["## Hosts", "", *_md_table(HOST_COLUMNS, doc["totals"]["by_host"]), ""]
            if fleet(doc)
            else []
        ),
        "## Schemas",
        "",
        *_md_table(schema_columns(doc), doc["totals"]["by_schema"]),
        "",
        "## Tablespaces",
        "",
    ]
    compare = doc.get("compare")
    tail = [*_md_changes(compare), ""] if compare else []
    tail += ["## Flags", ""]
    tail += [f"- **{name}**: {meaning}" for name, meaning in doc["flags"].items()]
    lines = itertools.chain(lines, _md_table(row_columns(doc), doc["tablespaces"]), [""], tail)
    for line in lines:
        out.write(shown(line) + "\n")


CHANGE_COLUMNS: list[Column] = [
    ("name", "Tablespace", False, lambda c: c["name"] or c["path"], lambda c: c["name"]),
    ("status", "Change", False, lambda c: c["status"], lambda c: c["status"]),
    ("logical_delta", "Logical Δ", True, lambda c: _signed_bytes(c["logical_size"]["delta"]),
     lambda c: c["logical_size"]["delta"]),
    ("allocated_delta", "Allocated Δ", True,
     lambda c: _signed_bytes(c["allocated_size"]["delta"]),
     lambda c: c["allocated_size"]["delta"]),
    ("allocated_new", "Allocated now", True,
     lambda c: human_bytes(c["allocated_size"]["new"]) if c["status"] != "dropped" else "",
     lambda c: c["allocated_size"]["new"]),
    ("what", "What changed", False, change_text, change_text),
]  # fmt: skip


def compare_headline(compare: dict[str, Any]) -> str:
    s = compare["summary"]
    against = compare["against"]
    when = f" of {against['generated_at']}" if against.get("generated_at") else ""
    return (
        f"Since {against['report']}{when}: {s['added']} added, {s['dropped']} dropped, "
        f"{s['changed']} changed, {s['unchanged']} unchanged; logical "
        f"{_signed_bytes(s['logical_size']['delta'])}, allocated "
        f"{_signed_bytes(s['allocated_size']['delta'])}"
    )


def _md_changes(compare: dict[str, Any]) -> list[str]:
    return [
        "## Changes",
        "",
        compare_headline(compare) + ".",
        "",
        *_md_table(CHANGE_COLUMNS, compare["changes"]),
    ]


# --- Rich table (the terminal) ---------------------------------------------------------------


#: per column key: (priority, short title); priority 0 is never dropped, higher goes first
TERMINAL_COLUMNS: dict[str, tuple[int, str | None]] = {
    "tablespace": (0, None),
    "host": (0, None),
    "schema": (0, None),
    "name": (0, None),
    "allocated_size": (1, "Alloc"),
    "logical_size": (2, None),
    "flags": (3, None),
    "flagged": (3, None),
    "predicted_allocated": (4, "Predicted"),
    "saving_pct": (5, None),
    "compression": (6, "Compr."),
    "checksum_invalid": (7, "Bad"),
    "files": (2, None),
    "status": (1, None),
    "logical_delta": (2, "Logical Δ"),
    "allocated_delta": (1, "Alloc Δ"),
    "allocated_new": (4, "Alloc now"),
    "what": (3, None),
    "row_format": (8, "Row fmt"),
    "format": (9, None),
    "unpunched_pages": (10, "Unpunch."),
    "extents": (11, "Ext."),
    "drop_seconds": (6, None),
}
#: text columns that may wrap, and what separates their items
_WRAPS = {"flags": ", ", "compression": " + ", "what": "; ", "flagged": ", "}


def print_table(
    doc: dict[str, Any], wide: bool = False, made: list[RowCells] | None = None
) -> None:
    """The report as Rich tables that fit the terminal (columns dropped by priority, said in a
    footer; ``wide`` keeps them all); on a pipe every column at its natural width. ``made``:
    the rows' cells already made for :func:`row_columns` of ``doc``, in the rows' order."""

    from ibdtool.cli.render import literal, table_console

    con = table_console(wide)
    notes: list[str] = []
    print_rows_table(con, row_columns(doc), doc["tablespaces"], wide, notes=notes, made=made)
    _print_notes(con, notes)
    con.print(fitted_table("Schemas", schema_columns(doc), doc["totals"]["by_schema"], wide))
    if fleet(doc):
        con.print(fitted_table("Hosts", HOST_COLUMNS, doc["totals"]["by_host"], wide))
    con.print(literal(headline(doc), style="bold"))
    compare = doc.get("compare")
    if compare:
        con.print()
        con.print(fitted_table("Changes", CHANGE_COLUMNS, compare["changes"], wide))
        con.print(literal(compare_headline(compare), style="bold"))


def _print_notes(con: Any, notes: list[str]) -> None:
    """The lines under the table (:func:`sdi_note`), dim; on a pipe or a file, where Rich
    writes a printable line narrower than the console as it is, written so (Rich took ~65 µs a
    line: a 100,000-file table has a note for each MySQL 8 table whose SDI names another)."""
    from rich.cells import cell_len

    from ibdtool.cli.render import literal

    plain = not con.is_terminal
    for note in notes:
        text = shown(note)
        if plain and text.isprintable() and cell_len(text) <= con.width:
            con.file.write(text + "\n")
        else:
            con.print(literal(note, style="dim"))


#: one row of the "Tablespaces" table: its cell texts (as printed), whether it is an error
#: row, and its line under the table ("" for none)
RowCells = tuple[tuple[str, ...], bool, str]


def row_cells(columns: list[Column], row: dict[str, Any], same: dict[str, str]) -> RowCells:
    """A row's :data:`RowCells`; ``same`` shares the texts that repeat (one string each)."""
    cells = (shown(text(row)) for _key, _name, _numeric, text, _raw in columns)
    note = sdi_note(row)
    return (
        tuple(same.setdefault(c, c) for c in cells),
        bool(row.get("error")),
        f"{row['name']}: {note}" if note else "",
    )


class TableCells:
    """The "Tablespaces" table's cells made as each row arrives (while the workers scan, not
    after the scan on one core), in arrival order; :meth:`in_order` gives them in a store's
    order once the scan is over."""

    def __init__(self, columns: list[Column]) -> None:
        self.columns = columns
        self.rows: list[RowCells] = []
        self._same: dict[str, str] = {}
        #: arrival indices of FULLTEXT rows: named after their table once the scan is over
        self._fulltext: list[int] = []

    def add(self, row: dict[str, Any]) -> None:
        if row.get("fulltext"):
            self._fulltext.append(len(self.rows))
        self.rows.append(row_cells(self.columns, row, self._same))

    def in_order(self, store: Any) -> list[RowCells]:
        """The cells in the order of ``store`` (a :class:`~ibdtool.report.RowStore` of the same
        rows, in the same arrival order), its FULLTEXT rows' made again from it."""
        for i in self._fulltext:
            self.rows[i] = row_cells(self.columns, store.row_at(i), self._same)
        return [self.rows[i] for i in store.order()]


def print_rows_table(
    con: Any,
    columns: list[Column],
    rows: Iterable[dict[str, Any]],
    wide: bool,
    chunk: int = 0,
    notes: list[str] | None = None,
    made: list[RowCells] | None = None,
) -> None:
    """The "Tablespaces" table of :func:`fitted_table`, printed from rows unpacked one at a
    time: only each row's cell texts are kept (shared where they repeat), and a long table
    is rendered in pieces (:func:`ibdtool.cli.render.print_fitted`). ``notes`` gets the
    line each row has under the table (:func:`sdi_note`), in the same pass. ``made``: the
    rows' cells already made (:class:`TableCells`), in the rows' order: ``rows`` is not read."""
    from rich.text import Text

    from ibdtool.cli.render import TABLE_CHUNK, print_fitted

    cols = _cols(columns)
    if made is None:
        same: dict[str, str] = {}
        made = [row_cells(columns, row, same) for row in rows]
    texts = [cells for cells, _error, _note in made]
    errors = {n for n, (_cells, error, _note) in enumerate(made) if error}
    if notes is not None:
        notes.extend(note for _cells, _error, note in made if note)

    def style(row: int, key: str, value: str) -> Any:
        if key == "flags" and value:
            return Text(value, style="red" if row in errors else "yellow")
        if key == "checksum_invalid" and value not in ("", "0"):
            return Text(value, style="bold red")
        return value

    print_fitted(con, "Tablespaces", cols, texts, wide, style, chunk or TABLE_CHUNK)


def _cols(columns: list[Column]) -> list[Any]:
    from ibdtool.cli.fit import Col

    cols = []
    for key, name, numeric, _text, _raw in columns:
        priority, short = TERMINAL_COLUMNS.get(key, (5, None))
        cols.append(Col(key, name, priority, numeric=numeric, short=short, wrap=_WRAPS.get(key)))
    return cols


def fitted_table(title: str, columns: list[Column], items: list[dict[str, Any]], wide: bool) -> Any:
    """One Rich table of ``items`` with the columns that fit (and a caption naming the rest)."""
    from rich.text import Text

    from ibdtool.cli.fit import Col
    from ibdtool.cli.render import fitted

    cols = []
    for key, name, numeric, _text, _raw in columns:
        priority, short = TERMINAL_COLUMNS.get(key, (5, None))
        cols.append(Col(key, name, priority, numeric=numeric, short=short, wrap=_WRAPS.get(key)))
    texts = [[text(it) for _key, _name, _numeric, text, _raw in columns] for it in items]

    def style(row: int, key: str, value: str) -> Any:
        if key == "flags" and value:
            return Text(value, style="red" if items[row].get("error") else "yellow")
        if key == "checksum_invalid" and value not in ("", "0"):
            return Text(value, style="bold red")
        return value

    return fitted(title, cols, texts, wide, style)


# --- HTML ------------------------------------------------------------------------------------

_CSS = """
:root { --fg:#1d232b; --bg:#fff; --muted:#5b6672; --line:#d9dee4; --head:#f2f4f7;
  --logical:#b7c0cc; --allocated:#2f6fdb; --warn:#a65f00; --bad:#c3272b; }
@media (prefers-color-scheme: dark) { :root { --fg:#e6e9ee; --bg:#15191f; --muted:#9aa5b1;
  --line:#2c333c; --head:#1e242c; --logical:#4b5563; --allocated:#5b9cff; --warn:#f0a64a;
  --bad:#ff6b6b; } }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); margin: 24px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px; }
p.meta { color: var(--muted); margin: 0 0 6px; } p.headline { font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left;
  white-space: nowrap; }
td:not(.num) { white-space: normal; overflow-wrap: anywhere; }
th { background: var(--head); position: sticky; top: 0; cursor: pointer; user-select: none; }
th.num, td.num { text-align: right; }
th[aria-sort="ascending"]::after { content: " ▲"; }
th[aria-sort="descending"]::after { content: " ▼"; }
tbody tr:hover { background: var(--head); }
td.flags { color: var(--warn); white-space: normal; } tr.error td.flags { color: var(--bad); }
td.bad { color: var(--bad); font-weight: 600; }
.note { color: var(--muted); font-size: 12px; }
svg text { fill: var(--fg); font-size: 12px; }
svg .logical { fill: var(--logical); } svg .allocated { fill: var(--allocated); }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dt { font-weight: 600; }
"""

_JS = """
function sortTable(table, key, dir) {
  if (!table) return;
  const th = table.querySelector('th[data-key="' + key + '"]');
  if (!th) return;
  const idx = Array.prototype.indexOf.call(th.parentNode.children, th);
  const num = th.classList.contains("num");
  const body = table.tBodies[0];
  const value = function (row) {
    const cell = row.cells[idx];
    const raw = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent;
    if (!num) return raw.toLowerCase();
    return raw === "" ? -Infinity : parseFloat(raw);
  };
  const rows = Array.prototype.slice.call(body.rows);
  rows.sort(function (a, b) {
    const x = value(a), y = value(b);
    return (x < y ? -1 : x > y ? 1 : 0) * (dir === "desc" ? -1 : 1);
  });
  rows.forEach(function (r) { body.appendChild(r); });
  table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
  th.setAttribute("aria-sort", dir === "desc" ? "descending" : "ascending");
}
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    const now = th.getAttribute("aria-sort");
    const dir = now === "ascending" ? "desc" : now === "descending" ? "asc"
      : (th.classList.contains("num") ? "desc" : "asc");
    sortTable(th.closest("table"), th.getAttribute("data-key"), dir);
  });
});
(function () {
  const m = /^#sort=([\\w-]+):(\\w+):(asc|desc)$/.exec(location.hash);
  if (m) sortTable(document.getElementById(m[1]), m[2], m[3]);
})();
"""


def _e(value: Any) -> str:
    """HTML text or attribute: markup escaped, and control characters (which XML forbids and
    ``cat`` would send to a terminal) shown as :func:`ibdtool.text.shown` writes them."""
    return html.escape("" if value is None else shown(value), quote=True)


def _html_table(table_id: str, columns: list[Column], items: Iterable[dict[str, Any]]) -> str:
    return "".join(_html_table_parts(table_id, columns, items))


def _html_table_parts(
    table_id: str, columns: list[Column], items: Iterable[dict[str, Any]]
) -> Iterator[str]:
    """:func:`_html_table`'s text in pieces, a row at a time."""
    head = "".join(
        f'<th data-key="{_e(key)}"{" class=num" if numeric else ""}>{_e(title)}</th>'
        for key, title, numeric, _text, _raw in columns
    )
    yield f'<table id="{table_id}" class="sortable"><thead><tr>{head}</tr></thead><tbody>\n'
    sep = ""
    for it in items:
        cells = []
        for key, _title, numeric, text, raw in columns:
            classes = ["num"] if numeric else []
            if key == "flags":
                classes.append("flags")
            value = raw(it)
            if key == "checksum_invalid" and value:
                classes.append("bad")
            attr = f' class="{" ".join(classes)}"' if classes else ""
            data = f' data-v="{_e(value)}"' if numeric else ""
            cells.append(f'<td data-key="{_e(key)}"{attr}{data}>{_e(text(it))}</td>')
        name = it.get("name") if "name" in it else it.get("schema")
        row_class = ' class="error"' if it.get("error") else ""
        yield f'{sep}<tr data-name="{_e(name)}"{row_class}>{"".join(cells)}</tr>'
        sep = "\n"
    yield "\n</tbody></table>"


def _chart_label(label: str, most: int = 56) -> str:
    return label if len(label) <= most else label[: most - 1] + "…"


def schema_chart(by_schema: list[dict[str, Any]], width: int = 760) -> str:
    """Inline SVG: per schema, a bar for logical size and one for allocated size."""
    bar_h, gap, value_w = 11, 10, 90
    plot_w = width - 150 - value_w
    labels = [_chart_label(schema_label(t["schema"])) for t in by_schema]
    # the label column as wide as the longest name (12 px text: ~7 px a character)
    label_w = max(150, min(420, 7 * max((len(x) for x in labels), default=0) + 16))
    width = label_w + plot_w + value_w
    top = 24
    height = top + len(by_schema) * (2 * bar_h + gap) + 4
    biggest = max(
        [max(t["logical_size"], t["allocated_size"]) for t in by_schema] + [1],
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="chart" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" '
        f'aria-label="Logical and allocated size per schema">',
        f'<rect class="logical" x="{label_w}" y="4" width="12" height="10"/>'
        f'<text x="{label_w + 16}" y="13">logical (st_size)</text>'
        f'<rect class="allocated" x="{label_w + 140}" y="4" width="12" height="10"/>'
        f'<text x="{label_w + 156}" y="13">allocated (st_blocks × 512)</text>',
    ]
    y = top
    for t, label_text in zip(by_schema, labels, strict=True):
        label = schema_label(t["schema"])
        parts.append(
            f'<text x="{label_w - 8}" y="{y + bar_h + 4}" text-anchor="end">{_e(label_text)}'
            f"<title>{_e(label)}</title></text>"
        )
        for i, kind in enumerate(("logical_size", "allocated_size")):
            value = t[kind]
            w = max(1.0, plot_w * value / biggest) if value else 0.0
            cls = kind.removesuffix("_size")
            by = y + i * bar_h
            parts.append(
                f'<rect class="{cls}" data-schema="{_e(label)}" data-v="{value}" '
                f'x="{label_w}" y="{by}" width="{w:.1f}" height="{bar_h - 1}">'
                f"<title>{_e(label)} {cls}: {_e(human_bytes(value))}</title></rect>"
                f'<text x="{label_w + w + 4:.1f}" y="{by + bar_h - 2}">'
                f"{_e(human_bytes(value))}</text>"
            )
        y += 2 * bar_h + gap
    parts.append("</svg>")
    return "".join(parts)


#: the HTML page map: at most this many cells a row, each at least MAP_MIN_CELL pixels, so that
#: a big file's 512 cells make a block of 8 rows (704 × 88 px), not a 1024 × 2 px hairline
MAP_COLUMNS, MAP_MIN_CELL, MAP_MAX_CELL, MAP_WIDTH = 64, 6, 16, 760


def page_map_svg(m: dict[str, Any], label: str, width: int = MAP_COLUMNS) -> str:
    """One tablespace's sampled page-type map (``report --map``) as an inline SVG grid."""
    from ibdtool.present import type_color

    cells = m["cells"]
    cols = min(width, max(1, len(cells)))
    size = max(MAP_MIN_CELL, min(MAP_MAX_CELL, MAP_WIDTH // cols))
    rows = -(-len(cells) // cols)
    colors = [type_color(t) for t in m["types"]]
    rects = "".join(
        f'<rect x="{(i % cols) * size}" y="{(i // cols) * size}" width="{size - 1 or 1}" '
        f'height="{size - 1 or 1}" fill="{colors[c]}" data-type="{_e(m["types"][c])}"/>'
        for i, c in enumerate(cells)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="pagemap" role="img" '
        f'width="{cols * size}" height="{rows * size}" aria-label="{_e(label)} page map">'
        f"{rects}</svg>"
    )


def _maps_section(doc: dict[str, Any]) -> str:
    rows = [r for r in doc["tablespaces"] if r.get("map")]
    if not rows:
        return ""
    from ibdtool.present import type_color

    seen: dict[str, str] = {}
    items = []
    for r in rows:
        m = r["map"]
        for t in m["types"]:
            seen.setdefault(t, type_color(t))
        every = "every page" if m["per_cell"] == 1 else f"1 cell ≈ {m['per_cell']:.0f} pages"
        items.append(
            f'<div class="map" data-name="{_e(r.get("name"))}"><p>{_e(tablespace_label(r))} '
            f'<span class="note">{m["pages"]:,} pages, {every}</span></p>'
            f"{page_map_svg(m, tablespace_label(r))}</div>"
        )
    legend = " ".join(
        f'<span><svg width="10" height="10"><rect width="10" height="10" fill="{c}"/></svg> '
        f"{_e(t)}</span>"
        for t, c in seen.items()
    )
    return (
        '<section id="maps"><h2>Page maps by type</h2>'
        f'<p class="note">{legend}</p>{"".join(items)}</section>'
    )


def write_html(doc: dict[str, Any], out: IO[str]) -> None:
    host = doc.get("host", "?")
    paths = ", ".join(doc.get("paths", []))
    notes = [
        f"<li>{_e(r['name'])}: {_e(sdi_note(r))}</li>" for r in doc["tablespaces"] if sdi_note(r)
    ]
    sections = [
        f"<header><h1>InnoDB tablespaces on {_e(host)}</h1>"
        f'<p class="meta">Generated {_e(doc.get("generated_at"))} by ibdtool '
        f"{_e(doc.get('ibdtool_version'))} from {_e(paths)}</p>"
        f'<p class="headline" id="headline">{_e(headline(doc))}</p></header>',
        "<section><h2>Logical vs allocated per schema</h2>"
        f"{schema_chart(doc['totals']['by_schema'])}</section>",
        *(
            [
                "<section><h2>Hosts</h2>"
                f"{_html_table('hosts', HOST_COLUMNS, doc['totals']['by_host'])}</section>"
            ]
            if fleet(doc)
            else []
        ),
        "<section><h2>Schemas</h2>"
        f"{_html_table('schemas', schema_columns(doc), doc['totals']['by_schema'])}</section>",
    ]
    # the rows' table is written in pieces, a row at a time; the sections after it are small
    rows_section = itertools.chain(
        ["<section><h2>Tablespaces</h2>"],
        _html_table_parts("tablespaces", row_columns(doc), doc["tablespaces"]),
        [f'<ul class="note">{"".join(notes)}</ul>' if notes else "", "</section>"],
    )
    after: list[str] = []
    maps = _maps_section(doc)
    if maps:
        after.append(maps)
    compare = doc.get("compare")
    if compare:
        after.append(
            f"<section><h2>Changes</h2><p>{_e(compare_headline(compare))}</p>"
            f"{_html_table('changes', CHANGE_COLUMNS, compare['changes'])}</section>"
        )
    flags = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in doc["flags"].items())
    after.append(f"<section><h2>Flags</h2><dl>{flags}</dl></section>")
    out.write(
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>ibdtool report: {_e(host)}</title><style>{_CSS}</style></head><body>\n"
    )
    for section in sections:
        out.write(section + "\n")
    for piece in rows_section:
        out.write(piece)
    for section in after:
        out.write("\n" + section)
    out.write(f"\n<script>{_JS}</script></body></html>\n")


def _write_openmetrics(doc: dict[str, Any], out: IO[str]) -> None:
    from ibdtool.cli.report_openmetrics import write_openmetrics

    write_openmetrics(doc, out)


WRITERS: dict[str, Callable[[dict[str, Any], IO[str]], None]] = {
    "json": write_json,
    "csv": write_csv,
    "markdown": write_markdown,
    "html": write_html,
    "openmetrics": _write_openmetrics,
}
