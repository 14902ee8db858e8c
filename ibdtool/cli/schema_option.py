"""The ``--schema`` option of inspect, pages, report and tui, declared once.

The decorated command receives ``schemas``: the :class:`~ibdtool.tablespace.schemas.Schemas` read
from the option's SQL (or ``@FILE``), or None. Text that holds no readable ``CREATE TABLE`` is a
one-line error (exit 2). Each file then takes the statement of its own table
(:meth:`~ibdtool.tablespace.schemas.Schemas.for_file`) for its index names, by order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def schema_options(fn: F) -> F:
    """Add ``--schema SQL|@FILE`` and pass ``schemas=``."""

    @click.option(
        "--schema",
        "schema_sql",
        metavar="SQL|@FILE",
        help="CREATE TABLE statements (SHOW CREATE TABLE, mysqldump --no-data; @FILE reads a "
        "file): index names by order where the file has no SDI and no .cfg.",
    )
    @functools.wraps(fn)
    def wrapper(*args: Any, schema_sql: str | None, **kw: Any) -> Any:
        if schema_sql is None:
            return fn(*args, schemas=None, **kw)
        from ibdtool.tablespace import load_schemas

        return fn(*args, schemas=load_schemas(schema_sql), **kw)

    return wrapper  # type: ignore[return-value]
