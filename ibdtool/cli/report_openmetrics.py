"""``report --format openmetrics``: the report as gauges, for Prometheus.

The text is the OpenMetrics 1.0 exposition (which Prometheus' text format reads too): write it
into node_exporter's textfile-collector directory (``--collector.textfile.directory``, a file
ending in ``.prom``, renamed into place) and every scrape carries the figures. One metric
family per figure, each a gauge:

* ``ibdtool_tablespace_*``, labelled ``path``, ``schema``, ``table``, ``partition`` (and
  ``host`` in a fleet report): logical and allocated bytes, bytes saved, extents, pages,
  compressed pages, unpunched pages, pages failing their checksum, and with ``--simulate`` the
  predicted allocated bytes and saving of the best page compression; ``…_error`` is 1 for a
  file that could not be read (its other figures are absent).
* ``ibdtool_schema_*``, labelled ``schema``: the same sums per schema, and the file count.
* ``ibdtool_report_*``: files, unreadable files, and when the report was made.

Label values are names from files and servers: their control characters are first shown
escaped (:func:`ibdtool.present.shown`, as in every output, since the file is also read on
terminals), then the text is escaped as the format says (``\\``, ``"``, newline); names from
files are never metric names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import IO, Any

from ibdtool.present import shown

PREFIX = "ibdtool"

#: (metric suffix, help, value of a tablespace row, value of a schema total)
_Getter = Callable[[dict[str, Any]], Any]


def _sim(key: str) -> _Getter:
    return lambda r: (r.get("simulation") or {}).get(key)


def _checksum_invalid(r: dict[str, Any]) -> Any:
    chk = r.get("checksum")
    return chk.get("invalid") if isinstance(chk, dict) else r.get("checksum_invalid")


FIGURES: tuple[tuple[str, str, _Getter], ...] = (
    ("logical_bytes", "Size of the file (st_size).", lambda r: r.get("logical_size")),
    ("allocated_bytes", "Bytes the filesystem allocates (st_blocks*512).",
     lambda r: r.get("allocated_size")),
    ("saved_bytes", "Logical minus allocated bytes: what holes save.", lambda r: r.get("saving")),
    ("extents", "Extents the filesystem maps for the file (FIEMAP).", lambda r: r.get("extents")),
    ("pages", "Pages in the file.", lambda r: r.get("pages")),
    ("compressed_pages", "Pages stored compressed.", lambda r: r.get("compressed_pages")),
    ("unpunched_pages", "Compressed pages whose unused tail is not a hole.",
     lambda r: r.get("unpunched_pages")),
    ("bad_pages", "Pages failing their checksum.", _checksum_invalid),
    ("predicted_allocated_bytes", "Allocated bytes predicted under the best page compression "
     "(--simulate).", _sim("predicted_allocated")),
    ("predicted_saved_bytes", "Bytes the best page compression is predicted to save "
     "(--simulate).", _sim("saving")),
)  # fmt: skip


def _escape(value: Any) -> str:
    text = "" if value is None else shown(value)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, Any]]) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return "{" + inner + "}" if inner else ""


def _number(v: Any) -> str | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return repr(float(v)) if isinstance(v, float) else str(v)


def _family(name: str, help_text: str, samples: Iterable[tuple[str, str]]) -> Iterator[str]:
    """One family's lines; none at all when it has no sample."""
    first = True
    for labels, value in samples:
        if first:
            yield f"# TYPE {name} gauge"
            yield f"# HELP {name} {help_text}"
            first = False
        yield f"{name}{labels} {value}"


def openmetrics_text(doc: dict[str, Any]) -> str:
    """The whole report document as OpenMetrics text (ends with ``# EOF``)."""
    return "".join(line + "\n" for line in openmetrics_lines(doc))


def openmetrics_lines(doc: dict[str, Any]) -> Iterator[str]:
    """:func:`openmetrics_text` a line at a time: one pass over the rows per family, so that
    rows unpacked one at a time (:class:`~ibdtool.report.RowStore`) are never all held."""
    rows = doc.get("tablespaces") or []
    fleet = any(r.get("host") for r in rows)

    def row_labels(r: dict[str, Any]) -> str:
        pairs = [("host", r.get("host"))] if fleet else []
        pairs += [("path", r.get("path")), ("schema", r.get("schema")),
                  ("table", r.get("table")), ("partition", r.get("partition") or "")]  # fmt: skip
        return _labels(pairs)

    def row_samples(get: _Getter) -> Iterator[tuple[str, str]]:
        for r in rows:
            v = _number(get(r)) if not r.get("error") else None
            if v is not None:
                yield row_labels(r), v

    for suffix, help_text, get in FIGURES:
        yield from _family(f"{PREFIX}_tablespace_{suffix}", help_text, row_samples(get))
    errors = ((row_labels(r), "1" if r.get("error") else "0") for r in rows)
    yield from _family(f"{PREFIX}_tablespace_error", "1: the file could not be read.", errors)

    totals = doc.get("totals") or {}
    by_schema = [t for t in totals.get("by_schema") or [] if "schema" in t]
    for suffix, help_text, get in (
        ("files", "Tablespace files of the schema.", lambda t: t.get("files")),
        *FIGURES,
    ):
        samples = []
        for t in by_schema:
            v = _number(get(t))
            if v is not None:
                samples.append((_labels([("schema", t.get("schema") or "")]), v))
        yield from _family(f"{PREFIX}_schema_{suffix}", help_text + " Per schema.", samples)

    overall = totals.get("all") or {}
    for suffix, help_text, key in (
        ("files", "Tablespace files in the report.", "files"),
        ("errors", "Files that could not be read.", "errors"),
    ):
        v = _number(overall.get(key))
        if v is not None:
            yield from _family(f"{PREFIX}_report_{suffix}", help_text, [("", v)])
    made = doc.get("generated_at")
    if isinstance(made, str):
        try:
            stamp = datetime.fromisoformat(made).timestamp()
        except ValueError:
            stamp = None
        if stamp is not None:
            yield from _family(f"{PREFIX}_report_generated_timestamp_seconds",
                    "When the report was made (Unix time).", [("", repr(stamp))])  # fmt: skip
    yield "# EOF"


def write_openmetrics(doc: dict[str, Any], out: IO[str]) -> None:
    for line in openmetrics_lines(doc):
        out.write(line + "\n")
