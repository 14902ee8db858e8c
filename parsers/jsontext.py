"""JSON text that came from outside, parsed within bounds: its size, its nesting and its type.

Journals, copy state files, saved reports and SDI records are JSON that ibdtool did not write
in this run (or did, and someone may have edited since). ``json.loads`` alone turns such text
into a ``RecursionError`` (``[[[[…`` a hundred thousand deep), a ``UnicodeDecodeError``, or
whatever Python type the text happens to hold. :func:`load_json` returns the value or raises
:class:`JsonTextError` (a :class:`~ibdtool.parsers.errors.ParseError`) with a one-line reason, and
:func:`too_deep` is the iterative depth check every reader shares.
"""

from __future__ import annotations

import json
from itertools import chain
from typing import Any

from ibdtool.parsers.errors import ParseError

#: nesting no ibdtool document comes near (a report row is 4 deep, an SDI record about 10)
MAX_DEPTH = 100


class JsonTextError(ParseError):
    """Text that is not the bounded JSON value asked for."""


_CONTAINERS = (dict, list)


def too_deep(obj: Any, limit: int) -> bool:
    """Does ``obj`` nest containers more than ``limit`` deep? (Iterative: no recursion.)

    One level at a time: the containers of each level gathered by a comprehension over the
    chained children of the level above (a report reads an SDI record of a few hundred
    containers per file, twice as fast as a stack of (item, depth) pairs)."""
    level: list[Any] = [obj]
    depth = 1
    while level:
        if depth > limit:
            return True
        children = chain.from_iterable(i.values() if isinstance(i, dict) else i for i in level)
        level = [c for c in children if isinstance(c, _CONTAINERS)]
        depth += 1
    return False


def load_json(
    data: bytes | str, max_bytes: int, kind: type | None = None, max_depth: int = MAX_DEPTH
) -> Any:
    """The JSON value of ``data``: UTF-8, at most ``max_bytes`` long, nested at most
    ``max_depth`` deep and, when ``kind`` is given, of that type (``dict`` for an object)."""
    if len(data) > max_bytes:
        raise JsonTextError(f"{len(data):,} bytes of JSON: more than {max_bytes:,}")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonTextError(f"not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(data)
    except RecursionError:
        raise JsonTextError(f"JSON nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise JsonTextError(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise JsonTextError(f"not valid JSON: {exc}") from None
    if isinstance(value, dict | list) and too_deep(value, max_depth):
        raise JsonTextError(f"JSON nested deeper than {max_depth} levels")
    if kind is not None and not isinstance(value, kind):
        want = "an object" if kind is dict else f"a {kind.__name__}"
        raise JsonTextError(f"a JSON {type(value).__name__}, not {want}")
    return value
