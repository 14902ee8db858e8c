"""Which server family: the one notion of "which server" that parsers and ibdtool share.

:class:`Vendor` names the family whose on-disk format a tablespace follows (FORMATS.md §4.4:
the flags, page types and SDI tell MySQL from MariaDB) and, the same value, the family of a live
server (``ibdtool.server.dialects``), the server a simulation models (``ibdtool.advise.simulate``)
and the server a migration verifies pages for. It lives here, at the bottom layer, because parsers
may import nothing from ibdtool while ibdtool reuses it freely. Forks that write their family's
format (Percona Server writes MySQL's) are the same Vendor: server lines that differ only in
behaviour are dialects in ``ibdtool.server.dialects``, not new members here.
"""

from __future__ import annotations

from enum import StrEnum


class Vendor(StrEnum):
    """A server family; its value is the lower-case name JSON output and option values use."""

    MYSQL = "mysql"
    MARIADB = "mariadb"
    UNKNOWN = "unknown"  # a file whose family cannot be told
