"""What a group package offers, imported only when first used (a PEP 562 module ``__getattr__``).

A group's ``__init__`` names what it offers twice: in an ``if TYPE_CHECKING:`` block of
imports, which type checkers and the import graph (grimp, import-linter) read, and in the table
given to :func:`lazy`, which the interpreter uses, so that importing a group imports none of its
modules and a command loads only what it uses (``tests/test_startup.py``).
``tests/test_layout.py`` keeps the two lists equal and every name importable.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy(
    package: str, offers: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``offers`` maps each of its
    modules to the names it offers from there (separated by spaces)."""
    where = {name: module for module, names in offers.items() for name in names.split()}

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)  # the next use is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__
