"""``json.dumps(value, indent=2, default=str)``, byte for byte, at about three times its speed:
the text of each row of ``report --format json``.

The standard library's C encoder does not indent; with ``indent`` set, ``json`` encodes through
a chain of Python generators, ~55 µs for a report row (5.5 s of a 100,000-file report, written
on one core after the scan). :func:`dumps` walks dicts and lists with plain recursion and
writes the scalars with the same functions ``json`` calls (``encode_basestring_ascii``,
``int.__repr__``, ``float.__repr__``), so the text is the same. Whatever else it meets (a
subclass, a key that is not a string or an int, an object for ``default``, a structure nested
past :data:`MAX_DEPTH`) is encoded by ``json`` itself, indented to where it sits.
``tests/test_indented_json.py`` compares the two on every report row of the samples and on
generated values.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _string
from typing import Any

#: deeper than this, ``json`` encodes the rest (and raises what it raises on a cycle)
MAX_DEPTH = 64

_INF = float("inf")
_repr_int = int.__repr__
_repr_float = float.__repr__


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return _repr_float(value)


def _by_json(value: Any, level: int) -> str:
    """``json``'s own text of ``value``, as it would sit ``level`` deep (every line after the
    first indented ``2 * level`` more: JSON text has no newline but between its tokens)."""
    text = json.dumps(value, indent=2, default=str)
    return text.replace("\n", "\n" + "  " * level) if level else text


def _value(value: Any, level: int) -> str:
    kind = type(value)
    if kind is str:
        return _string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return _repr_int(value)
    if kind is float:
        return _float(value)
    if level < MAX_DEPTH:
        if kind is dict:
            return _dict(value, level)
        if kind is list or kind is tuple:
            return _list(value, level)
    return _by_json(value, level)


def _dict(d: dict[Any, Any], level: int) -> str:
    if not d:
        return "{}"
    inner = level + 1
    parts = []
    for key, value in d.items():
        kind = type(key)
        if kind is str:
            name = _string(key)
        elif kind is int:
            name = '"' + _repr_int(key) + '"'
        else:  # float, bool and None keys, and those json refuses: json's words for them
            return _by_json(d, level)
        kind = type(value)
        if kind is str:
            text = _string(value)
        elif value is None:
            text = "null"
        elif kind is int:
            text = _repr_int(value)
        else:
            text = _value(value, inner)
        parts.append(name + ": " + text)
    pad = "\n" + "  " * inner
    return "{" + pad + ("," + pad).join(parts) + "\n" + "  " * level + "}"


def _list(items: list[Any] | tuple[Any, ...], level: int) -> str:
    if not items:
        return "[]"
    inner = level + 1
    pad = "\n" + "  " * inner
    texts = [_value(v, inner) for v in items]
    return "[" + pad + ("," + pad).join(texts) + "\n" + "  " * level + "]"


def dumps(value: Any, level: int = 0) -> str:
    """``json.dumps(value, indent=2, default=str)``, every line after the first indented
    ``2 * level`` more spaces (the text of a value that sits ``level`` deep in a document)."""
    return _value(value, level)
