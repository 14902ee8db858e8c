"""Inspect and simulate results in words, shared by the CLI's printers and the TUI's screens.

Styled text is plain data here: a line is a list of ``(text, style)`` segments, the style a
Rich style name (``"bold red"``) that the front ends hand to Rich; this module imports no Rich,
so the engine stays free of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ibdtool.advise import CHEAPEST_WITHIN
from ibdtool.parsers.filename import label_of_path
from ibdtool.present.text import (
    human_bytes,
    plural,
    range_text,
    seconds_text,
    shown,
    size_k,
    us_text,
)

if TYPE_CHECKING:
    from ibdtool.advise import Cost, Recommendation, Scenario, ScenarioResult, SimResult
    from ibdtool.fs import Allocation, AllocationTotals, DropCost, Layout
    from ibdtool.parsers.space import SpaceFormat
    from ibdtool.parsers.vendor import Vendor
    from ibdtool.tablespace import InspectResult

#: a line of text as ``(text, style)`` segments; ``""`` is no style
Styled = list[tuple[str, str]]


# --- inspect ---------------------------------------------------------------------------------


def format_rows(
    fmt: SpaceFormat, vendor: Vendor, label: str | None = None
) -> list[tuple[str, str]]:
    """The "Format" and "Page size" rows: what page 0 alone tells, or ``label`` (a scan's)."""
    from ibdtool.tablespace import format_name

    label = label or format_name(fmt)
    sizes = f"{size_k(fmt.logical_size)} logical / {size_k(fmt.physical_size)} physical"
    flags = " ".join(fmt.flags.names()) or "-"
    return [
        ("Format", f"{label}  (vendor {vendor.value}, space id {fmt.space_id})"),
        ("Page size", f"{sizes}   flags 0x{fmt.flags.raw:x} {flags}"),
    ]


def disk_text(logical_size: int, a: Allocation | AllocationTotals) -> str:
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


#: a predicted DROP longer than this is shown as a warning
SLOW_DROP_SECONDS = 1.0


def layout_text(lay: Layout) -> str:
    """The "Layout" row: how contiguous the file is and what that costs a cold full scan."""
    return (
        f"{lay.data_runs:,} data runs, mean extent {human_bytes(round(lay.mean_extent_bytes))}"
        f" · cold scan ~{lay.scan_factor:.2f}× dense (layout only; decompression CPU apart)"
    )


def drop_cost_styled(c: DropCost) -> Styled:
    """The "DROP cost" row: the predicted time to free the file's extents (extents per GiB,
    the range) and the rate it rests on (the JSON's ``basis`` also names the mount)."""
    per_gib = f" ({c.extents_per_gib:,.0f}/GiB)" if c.extents_per_gib is not None else ""
    slow = c.seconds is not None and c.seconds > SLOW_DROP_SECONDS
    return [
        (f"~{range_text(c.seconds, c.low, c.high)}", "yellow" if slow else ""),
        (f" for {c.extents:,} extents{per_gib}", ""),
        (f"   {shown(c.rate)}", "dim"),
    ]


def _counts(counter: dict[str, int], total: int | None = None) -> Styled:
    text: Styled = []
    for i, (name, n) in enumerate(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))):
        if i:
            text.append((" · ", "dim"))
        text.append((name, "bold"))
        text.append((f" {n}", ""))
        if total:
            text.append((f" ({100 * n / total:.0f}%)", "dim"))
    return text


def encryption_styled(enc: dict[str, Any]) -> Styled:
    """The "Encryption" row: page 0's key information, then what became of the pages."""
    if enc.get("vendor") == "mysql" and "master_key" in enc:
        head = f"MySQL {enc['magic']} master key {enc['master_key']}"
    elif "key_id" in enc:
        head = (
            f"MariaDB key id {enc['key_id']} scheme {enc['scheme']} min key version "
            f"{enc['min_key_version']} mode {enc['encryption']} iv {enc['iv']}"
        )
    else:
        head = "no key information on page 0"
    out: Styled = [(head, "")]
    n, done = enc["pages_encrypted"], enc["pages_decrypted"]
    versions = enc.get("page_key_versions")
    if versions:
        out.append((f" · key versions {versions['min']}..{versions['max']}", ""))
    out.append((f" · {n} pages encrypted", ""))
    if done:
        how = enc["decrypted_with"] + (f", {enc['cipher']}" if enc.get("cipher") else "")
        out.append((f", {done} decrypted ({how})", "green"))
    elif n:
        out.append((" (no key: --keyring)", "yellow"))
    return out


def zip_fill_styled(r: InspectResult) -> Styled:
    """For a ROW_FORMAT=COMPRESSED tablespace, its leaf pages as the server holds them and as
    stored: `` · the table's compressed leaf pages rebuilt: records 95%, images 92% of 8K (21
    pages)``."""
    z = r.zip_fill
    if z is None or not z.leaf_pages:
        return []
    # the table's pages: the average before it also counts the SDI's leaf pages (MySQL 8)
    out: Styled = [(" · the table's compressed leaf pages rebuilt: ", "")]
    if z.records_fill is not None and z.image_fill is not None:
        out.append((f"records {100 * z.records_fill:.0f}%, ", ""))
        out.append((f"images {100 * z.image_fill:.0f}% of {size_k(z.physical_size)}", ""))
    else:
        out.append(("none readable", "yellow"))
    count = (
        f"{z.rebuilt} of {z.leaf_pages} pages, sampled" if z.sampled else plural(z.rebuilt, "page")
    )
    out.append((f" ({count})", "dim"))
    if z.failed:
        out.append((f", {z.failed} damaged", "red"))
    return out


def inspect_rows(r: InspectResult) -> list[tuple[str, Styled]]:
    """The inspect summary as ``(name, value)`` rows, as a DBA reads it top to bottom."""
    fmt = r.fmt
    rows: list[tuple[str, Styled]] = [
        (name, [(value, "")]) for name, value in format_rows(fmt, r.vendor, r.label)
    ]
    many = "-" if r.kind in ("system", "undo", "temporary", "dictionary", "general") else None
    row_format = r.row_format or many or "unknown (full_crc32 flags do not record it)"
    if fmt.key_block_size:
        row_format += f" KEY_BLOCK_SIZE={fmt.key_block_size // 1024}"
    if r.sdi and len(r.sdi.tables) > 1:
        row_format += f"   {len(r.sdi.tables)} tables in the SDI"
    from_name = label_of_path(r.path) if r.kind == "table" else None
    if r.sdi and r.sdi.table:
        row_format += f"   table {r.sdi.schema}.{r.sdi.table}"
        if from_name and " partition " in from_name:
            row_format += " partition " + from_name.split(" partition ", 1)[1]
        if r.sdi.compression:
            row_format += f" COMPRESSION='{r.sdi.compression}'"
    elif from_name:
        row_format += f"   table {from_name} (by its file name)"
    rows.append(("Row format", [(row_format, "")]))
    rows.append(("Pages", [(f"{r.pages}  ", ""), *_counts(r.page_types)]))
    compression = dict(r.compression)
    if fmt.key_block_size and "none" in compression:  # ROW_FORMAT=COMPRESSED pages
        compression[f"zip {fmt.key_block_size // 1024}K"] = compression.pop("none")
    rows.append(("Compression", _counts(compression, r.pages)))
    if r.encryption is not None:
        rows.append(("Encryption", encryption_styled(r.encryption)))
    chk: Styled = [(f"{r.checksum_valid} valid", "green")]
    by = {k: v for k, v in r.checksum_by_algo.items() if k not in ("empty", "invalid")}
    if by:
        chk += [(" (", ""), *_counts(by), (")", "")]
    chk.append((f" · {r.checksum_empty} empty", ""))
    if r.unverifiable:
        chk.append((f" · {r.unverifiable} unverifiable (encrypted)", "yellow"))
    invalid = len(r.invalid_pages)
    chk.append((f" · {invalid} invalid", "bold red" if invalid else ""))
    if invalid:
        shown = ", ".join(map(str, r.invalid_pages[:20]))
        chk.append((f": pages {shown}{' …' if invalid > 20 else ''}", "red"))
    rows.append(("Checksums", chk))
    rows.append(("Disk", [(disk_text(r.logical_size, r.allocation), "")]))
    if r.drop_cost is not None:
        rows.append(("DROP cost", drop_cost_styled(r.drop_cost)))
    if r.layout is not None:
        rows.append(("Layout", [(layout_text(r.layout), "")]))
    if r.compression.get("none", 0) != r.pages:
        unp: Styled = [(f"{r.unpunched_pages} compressed pages", "")]
        if r.unpunched_pages:
            unp.append(
                (f" hold {human_bytes(r.unpunched_bytes)} more than their images need", "yellow")
            )
        rows.append(("Unpunched", unp))
    named = [ix for ix in r.indexes() if ix["name"] and ix["name"] != "SDI"]
    if named:
        idx: Styled = []
        for i, ix in enumerate(named):
            if i:
                idx.append((" · ", "dim"))
            levels = f", height {ix['height']}" if ix["height"] > 1 else ""
            idx.append((ix["name"], "bold"))
            idx.append((f" ({ix['id']}) {plural(ix['pages'], 'page')}{levels}", ""))
        idx.append((f"   {r.index_names.described}", "dim"))
        rows.append(("Indexes", idx))
    if r.avg_fill is not None:
        fill: Styled = [(f"{100 * r.avg_fill:.0f}% average", "")]
        fill += zip_fill_styled(r)
        rows.append(("Leaf fill", fill))
    if r.free.get("pages"):
        n_free = r.free["pages"]
        free: Styled = [
            (f"{n_free} page{'s' if n_free != 1 else ''} free by the extent descriptors", "")
        ]
        if r.free.get("with_data"):
            free.append((f", {r.free['with_data']} still holding old data", ""))
        if r.free.get("allocated_bytes"):
            free.append((f", {human_bytes(r.free['allocated_bytes'])} allocated on disk", "yellow"))
        rows.append(("Free space", free))
    for w in r.warnings:
        rows.append(("Warning", [(w, "yellow")]))
    for n, problem in r.problems[:10]:
        rows.append(("Problem", [(f"page {n}: {problem}", "red")]))
    if len(r.problems) > 10:
        rows.append(("", [(f"… {len(r.problems) - 10} more problems", "red")]))
    return rows


# --- simulate --------------------------------------------------------------------------------


def simulation_heading(r: SimResult) -> str:
    """Pages, sizes today and how many pages were simulated."""
    scan = (
        "full scan" if r.full else f"{r.pages_sampled} of {r.pages} pages sampled (seed {r.seed})"
    )
    what = "as rebuilt" if r.as_rebuilt else "as it is"
    return (
        f"{r.pages} pages of {size_k(r.page_size)}, {human_bytes(r.logical_size)} logical, "
        f"{human_bytes(r.allocated_size)} allocated today on "
        f"{human_bytes(r.fs_block_size)} blocks; the file {what}: {scan}"
    )


def rebuild_text(r: SimResult) -> str | None:
    """The rebuild alone (no compression): what the rebuilt file allocates and what that frees,
    each with its 95% interval (None for a simulation of the file as it is)."""
    alloc, saving = r.rebuild, r.rebuild_saving
    if alloc is None or saving is None:
        return None
    pct = 100 * saving.value / r.allocated_size if r.allocated_size else 0.0
    return (
        f"rebuild alone (no compression): {human_bytes(round(alloc.value))} "
        f"(95% CI {human_bytes(round(alloc.low))}–{human_bytes(round(alloc.high))}), "
        f"frees {human_bytes(round(saving.value))} ({pct:.0f}%, 95% CI "
        f"{human_bytes(round(saving.low))}–{human_bytes(round(saving.high))})"
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


def drop_note(r: SimResult) -> str | None:
    """What a DROP TABLE costs today and after the worst row's conversion, and the basis."""
    now = r.drop_now
    after = [x for x in r.results if x.drop_cost is not None and x.drop_cost.seconds is not None]
    if now is None and not after:
        return None
    parts = []
    if now is not None:
        parts.append(f"~{seconds_text(now.seconds)} now ({now.extents:,} extents)")
    if after:
        worst = max(after, key=lambda x: x.drop_cost.seconds or 0.0)  # type: ignore[union-attr]
        c = worst.drop_cost
        assert c is not None
        parts.append(
            f"~{seconds_text(c.seconds)} after {scenario_label(worst.scenario)} at "
            f"{worst.block.label} ({c.extents:,} extents)"
        )
    basis = (now or after[0].drop_cost).rate  # type: ignore[union-attr]
    return f"DROP TABLE: {'; '.join(parts)}; {shown(basis)}, ranges in --json"


def scenario_label(s: Scenario) -> str:
    level = f":{s.level}" if s.level is not None else ""
    if s.server == "what-if":
        return f"{s.algorithm}{level} (what-if)"
    return f"{s.server} {s.algorithm}{level}"


def cost_text(c: Cost | None) -> str:
    """``24 (22–27)``: the median µs per page and its spread (q1–q3); ``-`` when not
    measured."""
    if c is None:
        return "-"
    return f"{us_text(c.median)} ({us_text(c.q1)}–{us_text(c.q3)})"


def cost_note(r: SimResult) -> str | None:
    """How the CPU figures were measured (None when they were not)."""
    if not r.cost_repetitions:
        return None
    from ibdtool.advise import CLOCK

    return (
        f"µs/page: median of {r.cost_repetitions} runs on {plural(r.cost_pages, 'page')} "
        f"({CLOCK}), spread q1–q3"
    )


def _cost_words(x: ScenarioResult) -> str:
    c = x.cost
    if c is None:
        return ""
    return f"median {us_text(c.median)} µs/page, spread {us_text(c.q1)}–{us_text(c.q3)}"


def _ties_text(ties: tuple[ScenarioResult, ...]) -> str:
    named = [f"{scenario_label(x.scenario)} ({_cost_words(x)})" for x in ties[:3]]
    if len(ties) > 3:
        named.append(f"{len(ties) - 3} more")
    text = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return text + (" is" if len(ties) == 1 else " are")


def recommendation_text(rec: Recommendation, page_size: int) -> Styled:
    """One recommendation as a line: the best saver and the cheapest close one, or a warning."""
    b = rec.block
    if rec.nothing is not None:
        why = {
            "ntfs_unit": "NTFS frees space only in 16-cluster units",
            "block_too_large": f"{b.label} blocks are too large for {size_k(page_size)} pages",
            "row_compressed": "the file is already ROW_FORMAT=COMPRESSED",
            "already_compressed": "the file is already compressed about as well",
            "incompressible": "the data does not compress",
        }[rec.nothing]
        return [
            ("warning:", "yellow"),
            (f" {b.label} blocks: compression saves nothing ({why})", ""),
        ]
    best = rec.best
    cost = f", {_cost_words(best)}" if best.cost is not None else ""
    line = (
        f"{b.label} blocks: {scenario_label(best.scenario)} saves most "
        f"({best.saving_pct:.0f}%{cost})"
    )
    cheapest = rec.cheapest
    within = f"the cheapest in CPU within {CHEAPEST_WITHIN:.0f} points"
    if cheapest is not None:
        line += f"; {scenario_label(cheapest.scenario)} is {within} ({cheapest.saving_pct:.0f}%"
        line += f", {_cost_words(cheapest)})" if cheapest.cost is not None else ")"
    elif rec.certainty is not None:
        line += f"; it is also {within}"
    trade = _good_enough_text(rec)
    if rec.certainty is None:
        return [(line + trade, "")]
    if rec.certainty == "clear":
        return [(line, ""), (" — clearly", "green"), (trade, "")]
    return [
        (line + f", but {_ties_text(rec.ties)} within noise", ""),
        (" — either", "yellow"),
        (trade, ""),
    ]


def _good_enough_text(rec: Recommendation) -> str:
    """``; mariadb lz4 saves 52% for 27 µs/page (45× less CPU than mariadb bzip2), the cheapest
    saving at least 3/4 as much`` — or nothing."""
    from ibdtool.advise import GOOD_ENOUGH_SHARE

    g = rec.good_enough
    ref = rec.cheapest or rec.best
    if g is None or g.cost is None or ref.cost is None:
        return ""
    ratio = ref.cost.median / g.cost.median if g.cost.median > 0 else 0.0
    less = f"{ratio:.0f}× less CPU" if ratio else "less CPU"
    return (
        f"; {scenario_label(g.scenario)} saves {g.saving_pct:.0f}% for "
        f"{us_text(g.cost.median)} µs/page ({less} than {scenario_label(ref.scenario)}), "
        f"the cheapest saving at least {100 * GOOD_ENOUGH_SHARE:.0f}% as much"
    )
