"""Which server this is, and what follows from it: catalog tables, codecs, DDL and progress.

One :class:`Flavor` per connection, read from ``VERSION()`` and ``@@version_comment`` (Percona
Server counts as MySQL). Everything that differs between MariaDB and MySQL, or between versions,
is a property here, so that the planner and the progress code never parse a version string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from parsers import codecs

MYSQL_PAGE_CODECS = codecs.names("mysql")
MARIADB_PAGE_CODECS = codecs.names("mariadb")


@dataclass(frozen=True)
class Flavor:
    name: str  # "mariadb" | "mysql"
    version: tuple[int, int, int]
    version_string: str
    comment: str

    @property
    def mariadb(self) -> bool:
        return self.name == "mariadb"

    @property
    def label(self) -> str:
        product = "MariaDB" if self.mariadb else "MySQL"
        if "percona" in self.comment.lower():
            product = "Percona Server"
        return f"{product} {'.'.join(map(str, self.version))}"

    @property
    def catalog(self) -> str:
        """Key of the catalog queries in :mod:`ibdtool.server.sql`."""
        if self.mariadb:
            return "mariadb" if self.version >= (10, 6, 0) else "mariadb_pre106"
        return "mysql8" if self.version >= (8, 0, 0) else "mysql57"

    @property
    def page_codecs(self) -> tuple[str, ...]:
        """Codecs page compression can name on this server (loaded or not)."""
        if self.mariadb:
            return MARIADB_PAGE_CODECS if self.version >= (10, 1, 0) else ()
        return MYSQL_PAGE_CODECS if self.version >= (5, 7, 8) else ()

    @property
    def page_compression_is_attribute(self) -> bool:
        """MySQL: ``COMPRESSION=`` only tags the table; ``OPTIMIZE TABLE`` rewrites the pages."""
        return not self.mariadb

    @property
    def codec_plugins(self) -> bool:
        """MariaDB 10.7+ loads all but zlib as ``provider_*`` plugins
        (:attr:`parsers.codecs.Codec.mariadb_provider`)."""
        return self.mariadb and self.version >= (10, 7, 0)

    @property
    def has_read_only_compressed(self) -> bool:
        return self.mariadb and self.version >= (10, 6, 0)

    @property
    def has_file_format(self) -> bool:
        """MySQL 5.7 (and MariaDB < 10.3) still have ``innodb_file_format``."""
        if self.mariadb:
            return self.version < (10, 3, 0)
        return self.version < (8, 0, 0)

    @property
    def processlist_progress(self) -> bool:
        """MariaDB's PROCESSLIST has STAGE/MAX_STAGE/PROGRESS (filled for ALGORITHM=COPY)."""
        return self.mariadb

    @property
    def partition_separator(self) -> str:
        """``t#p#p0`` on MySQL 8, ``t#P#p0`` elsewhere (compared case-insensitively anyway)."""
        return "#p#" if not self.mariadb and self.version >= (8, 0, 0) else "#P#"


_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_flavor(version: str, comment: str = "") -> Flavor:
    """``VERSION()`` and ``@@version_comment`` → :class:`Flavor`."""
    m = _VERSION.search(version)
    numbers = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (0, 0, 0)
    if m and version.startswith("5.5.5-") and "mariadb" in version.lower():
        # the replication-compatible prefix old MariaDB releases report
        rest = _VERSION.search(version[6:])
        if rest:
            numbers = (int(rest.group(1)), int(rest.group(2)), int(rest.group(3)))
    name = "mariadb" if "mariadb" in (version + " " + comment).lower() else "mysql"
    return Flavor(name=name, version=numbers, version_string=version, comment=comment)
