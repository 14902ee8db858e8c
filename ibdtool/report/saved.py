"""The shape of a saved ``ibdtool report`` (``--format json`` or ``jsonl``), declared once.

``report --compare OLD`` reads a file that may come from another version, another host or an
editor, and sums and diffs its rows. Every field the comparison reads is declared here with
its type (README, ``report --json``); :func:`check_document` and :func:`check_row` check a
parsed file against the declarations before any arithmetic, so a malformed file is one line
naming the row and the field (:class:`Malformed`, which the loader turns into an input error,
exit 2), never a traceback half-way through a report. Fields not declared are carried along
unread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


#: kind -> (what it must be, for messages; test)
KINDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("a whole number", _is_int),
    "count": ("a whole number ≥ 0", lambda v: _is_int(v) and v >= 0),
    "seconds": (
        "a number of seconds ≥ 0",
        lambda v: (_is_int(v) or isinstance(v, float)) and 0 <= v < float("inf"),
    ),
    "strings": (
        "a list of strings",
        lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    ),
    "object": ("an object", lambda v: isinstance(v, dict)),
    "list": ("a list", lambda v: isinstance(v, list)),
}


@dataclass(frozen=True)
class Field:
    kind: str
    nullable: bool = True
    required: bool = False
    fields: dict[str, Field] | None = None  # an object's own declared fields


def _req(kind: str, nullable: bool = True) -> Field:
    return Field(kind, nullable=nullable, required=True)


#: a row of ``tablespaces`` (or a ``jsonl`` line): the keys every row has are required
ROW: dict[str, Field] = {
    "path": _req("string", nullable=False),
    "name": _req("string"),
    "schema": _req("string"),
    "table": _req("string"),
    "partition": _req("string"),
    "kind": _req("string"),
    "logical_size": _req("count"),
    "allocated_size": _req("count"),
    "saving": _req("integer"),
    "error": _req("string"),
    "flags": _req("strings", nullable=False),
    "host": Field("string"),  # report host:path; totals and --compare keys use it
    "format": Field("string"),
    "space_kind": Field("string"),
    "indexes": Field("list"),
    "row_format": Field("string"),
    "key_block_size": Field("count"),
    "page_compression": Field("string"),
    "declared_compression": Field("string"),
    "pages": Field("count"),
    "extents": Field("count"),
    "compressed_pages": Field("count"),
    "unpunched_pages": Field("count"),
    "unpunched_bytes": Field("count"),
    "drop_seconds": Field("seconds"),  # the predicted DROP time and its range, summed per schema
    "drop_low": Field("seconds"),
    "drop_high": Field("seconds"),
    "checksum": Field("object", fields={"invalid": Field("count", nullable=False)}),
    "simulation": Field("object", fields={"predicted_allocated": Field("count")}),
    "change": Field("object", fields={"status": Field("string", nullable=False)}),
}

#: the ``--format json`` document around the rows
DOCUMENT: dict[str, Field] = {
    "schema_version": _req("integer", nullable=False),
    "generated_at": Field("string"),
    "tablespaces": _req("list", nullable=False),  # of ROW
}


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if _is_int(v):
        return str(v)
    if isinstance(v, float):
        return "a fraction" if v == v else "NaN"
    if isinstance(v, str):
        return "a string"
    return "a list" if isinstance(v, list) else "an object"


class Malformed(ValueError):
    """``where: what is wrong`` (the caller adds the file and line)."""


def check_object(obj: Any, fields: dict[str, Field], where: str = "") -> None:
    """Raise :class:`Malformed` unless ``obj`` is an object matching ``fields``; ``where`` is
    its place in the file (``tablespaces[3]``)."""
    if not isinstance(obj, dict):
        raise Malformed(f"{where or 'row'}: expected an object, got {_type_name(obj)}")
    for key, spec in fields.items():
        at = f"{where}.{key}" if where else key
        if key not in obj:
            if spec.required:
                raise Malformed(f"{at}: missing")
            continue
        value = obj[key]
        if value is None:
            if not spec.nullable:
                raise Malformed(f"{at}: must not be null")
            continue
        what, test = KINDS[spec.kind]
        if not test(value):
            raise Malformed(f"{at}: expected {what}, got {_type_name(value)}")
        if spec.fields is not None:
            check_object(value, spec.fields, at)


def check_document(doc: dict[str, Any]) -> None:
    """A whole ``--format json`` document: its head, then every row."""
    check_object(doc, DOCUMENT)
    for i, row in enumerate(doc["tablespaces"]):
        check_object(row, ROW, f"tablespaces[{i}]")
