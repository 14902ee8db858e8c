"""The :class:`Dialect` base: what every server line answers, with the answers most lines share.

A dialect is one connected server's identity (its version and ``@@version_comment``) together
with everything that follows from it. Subclasses set the class attributes and override what
differs; the contract is described in :mod:`ibdtool.server.dialects`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ibdtool.server import sql
from parsers.vendor import Vendor

if TYPE_CHECKING:
    from ibdtool.server.context import Server
    from ibdtool.server.steps import PlanSettings, Step, Target
    from ibdtool.server.tables import TableInfo

Version = tuple[int, int, int]


@dataclass(frozen=True)
class Dialect:
    """One server line at one version. ``name`` is the family, whose file format it writes."""

    name: ClassVar[Vendor]
    product: ClassVar[str]  # how the label names it: "MySQL", "MariaDB", …

    version: Version
    version_string: str = ""
    comment: str = ""

    # -- which servers are this dialect ------------------------------------------------------------

    @classmethod
    def claims(cls, version: str, comment: str) -> bool:
        """Is the server that reports this ``VERSION()`` and ``@@version_comment`` this line?"""
        raise NotImplementedError

    @classmethod
    def version_numbers(cls, version: str, found: Version) -> Version:
        """The (major, minor, patch) of ``VERSION()``; ``found`` is its first x.y.z."""
        return found

    @property
    def label(self) -> str:
        return f"{self.product} {'.'.join(map(str, self.version))}"

    # -- catalog and version gates -----------------------------------------------------------------

    @property
    def catalog(self) -> str:
        """Key of the catalog queries in :mod:`ibdtool.server.sql`."""
        raise NotImplementedError

    @property
    def has_read_only_compressed(self) -> bool:
        """Has ``innodb_read_only_compressed`` (which refuses to write compressed rows)."""
        return False

    @property
    def has_file_format(self) -> bool:
        """Still has ``innodb_file_format`` (Antelope cannot hold compressed rows)."""
        return False

    @property
    def partition_separator(self) -> str:
        """Between a table's and its partition's name in tablespace names."""
        return "#P#"

    # -- codecs ------------------------------------------------------------------------------------

    @property
    def page_codecs(self) -> tuple[str, ...]:
        """Codecs page compression can name on this server (loaded or not)."""
        return ()

    def codec_plugin(self, codec: str) -> str | None:
        """The plugin that must be loaded for ``codec`` to work, or None when it is built in."""
        return None

    @property
    def codec_plugins(self) -> bool:
        """Does any codec come as a plugin on this server?"""
        return any(self.codec_plugin(c) for c in self.page_codecs)

    def codec_status(self, codec: str) -> str | None:
        """The global status variable that says whether ``codec`` is loaded (ON/OFF), or None
        when it always is."""
        return None

    # -- what a conversion can ask for, and the statements -----------------------------------------

    @property
    def page_compression_is_attribute(self) -> bool:
        """Does setting page compression only tag the table, leaving the pages to a rebuild?"""
        return False

    @property
    def table_compression_level(self) -> bool:
        """Can a table name its page-compression level (else only a server-wide setting)?"""
        return False

    @property
    def compresses_rtree(self) -> bool:
        """Does page compression apply to R-tree (SPATIAL index) pages too?"""
        return True

    @property
    def fulltext_rebuild(self) -> str:
        """What rebuilding a table with a FULLTEXT index takes, for the refusal message."""
        raise NotImplementedError

    def online(self, settings: PlanSettings) -> list[str]:
        """The ALGORITHM/LOCK clauses of a rebuild: refuse rather than silently block writes."""
        if settings.algorithm == "copy":
            return ["ALGORITHM=COPY", "LOCK=SHARED"]
        return ["ALGORITHM=INPLACE", "LOCK=NONE"]

    def rebuild_steps(
        self,
        table: TableInfo,
        target: Target,
        settings: PlanSettings,
        variables: Mapping[str, str],
    ) -> list[Step]:
        """The statements that bring ``table`` to ``target`` (server ``variables`` as read)."""
        raise NotImplementedError

    def plan_notes(self, server: Server, target: Target) -> list[str]:
        """What the user should know about a run to ``target`` on this server as a whole."""
        return []

    def writes_take_global_codec(self, variables: Mapping[str, str]) -> bool:
        """Do pages written from now on take the server-wide codec setting (so a table must be
        flushed before a changed setting is put back)?"""
        return False

    # -- progress ----------------------------------------------------------------------------------

    @property
    def processlist_progress(self) -> bool:
        """Does ``information_schema.PROCESSLIST`` report a running ALTER's progress?"""
        return False

    @property
    def process_query(self) -> str:
        """The PROCESSLIST row of one thread (:data:`ibdtool.server.sql.PROCESS`)."""
        return sql.PROCESS[self.name]
