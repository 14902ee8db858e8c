"""The :class:`Dialect` base: what every server line answers, with the answers most lines share.

A dialect is one connected server's identity (its version and ``@@version_comment``) together
with everything that follows from it. Subclasses set the class attributes and override what
differs; the contract is described in :mod:`ibdtool.server.dialects`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ibdtool.parsers.vendor import Vendor
from ibdtool.server.sql import TAG

if TYPE_CHECKING:
    from ibdtool.server.connection import Session
    from ibdtool.server.steps import PlanSettings, Step, Target
    from ibdtool.server.table_info import TableInfo

Version = tuple[int, int, int]

NUDGE_LWM = 0.001  # percent of the buffer pool dirty above which the page cleaner pre-flushes

TABLESPACE_COLUMNS = (
    "ts.SPACE AS space, ts.NAME AS name, ts.FLAG AS flag, ts.ROW_FORMAT AS row_format, "
    "ts.PAGE_SIZE AS page_size, ts.FS_BLOCK_SIZE AS fs_block_size, ts.FILE_SIZE AS file_size, "
    "ts.ALLOCATED_SIZE AS allocated_size"
)


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
        """Which InnoDB catalog the server has: ``"mysql8"`` (the data dictionary's
        ``INNODB_*`` views, names as written), ``"mysql57"``, ``"mariadb_pre106"`` (the
        ``INNODB_SYS_*`` tables, names in the filename encoding) or ``"mariadb"`` (10.6+)."""
        raise NotImplementedError

    @property
    def names_as_written(self) -> bool:
        """Does the InnoDB catalog name tablespaces as the tables are written (MySQL 8's data
        dictionary: ``db/t#p#p0``), not in the filename encoding (``@0``…, ``#P#``)?"""
        return False

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

    def plan_notes(
        self, variables: Mapping[str, str], session: Session, target: Target
    ) -> list[str]:
        """What the user should know about a run to ``target`` on this server as a whole
        (its ``variables`` as read; ``session`` to ask it more)."""
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
        """The PROCESSLIST row of one thread (parameter: its id): ``id``, ``command``,
        ``state`` and ``time`` (seconds) or ``time_ms``; lines that report an ALTER's progress
        there add ``stage``, ``max_stage`` and ``progress``."""
        return (
            f"{TAG} SELECT ID AS id, COMMAND AS command, STATE AS state, TIME AS time "
            "FROM information_schema.PROCESSLIST WHERE ID = %s"
        )

    # -- the InnoDB catalog ------------------------------------------------------------------------
    # The defaults are the INNODB_SYS_* tables every line had until MySQL 8.0 replaced them.

    @property
    def tablespaces_query(self) -> str:
        """Every tablespace: ``space``, ``name``, ``flag``, ``row_format``, ``page_size``,
        ``fs_block_size``, ``file_size``, ``allocated_size``, ``zip_page_size``,
        ``space_type`` and ``path`` (its file), from a query that aliases the tablespaces
        ``ts`` (:meth:`tablespace_by_name_query` appends to it)."""
        return (
            f"{TAG} SELECT {TABLESPACE_COLUMNS}, ts.ZIP_PAGE_SIZE AS zip_page_size, "
            "ts.SPACE_TYPE AS space_type, df.PATH AS path "
            "FROM information_schema.INNODB_SYS_TABLESPACES ts "
            "LEFT JOIN information_schema.INNODB_SYS_DATAFILES df ON df.SPACE = ts.SPACE"
        )

    @property
    def tablespace_by_name_query(self) -> str:
        """:meth:`tablespaces_query` of one tablespace (parameter: its catalog name)."""
        return self.tablespaces_query + " WHERE ts.NAME = %s"

    @property
    def indexes_of_space_query(self) -> str:
        """A tablespace's indexes (parameter: the space id): ``id``, ``name``, ``page_no``
        (the root page)."""
        return (
            f"{TAG} SELECT INDEX_ID AS id, NAME AS name, PAGE_NO AS page_no "
            "FROM information_schema.INNODB_SYS_INDEXES WHERE SPACE = %s"
        )

    @property
    def innodb_tables_query(self) -> str:
        """Every InnoDB table as the engine names it: ``name``, ``space``, ``space_type``,
        ``row_format``, ``zip_page_size``, ``table_id``."""
        return (
            f"{TAG} SELECT NAME AS name, SPACE AS space, SPACE_TYPE AS space_type, "
            "ROW_FORMAT AS row_format, ZIP_PAGE_SIZE AS zip_page_size, TABLE_ID AS table_id "
            "FROM information_schema.INNODB_SYS_TABLES"
        )

    # -- the buffer pool ---------------------------------------------------------------------------

    @property
    def dirty_above(self) -> int:
        """``INNODB_BUFFER_PAGE.OLDEST_MODIFICATION`` above this: the page holds changes its
        file does not have yet (0: not dirty; else the LSN of its oldest unwritten change)."""
        return 0

    def dirty_pages_query(self, n_spaces: int) -> str:
        """Pages of ``n_spaces`` tablespaces (parameters: their ids) modified in the buffer
        pool and not yet written to their file: ``space``, ``dirty``. The view walks the whole
        buffer pool: poll it slowly."""
        marks = ", ".join(["%s"] * n_spaces)
        return (
            f"{TAG} SELECT SPACE AS space, COUNT(*) AS dirty "
            "FROM information_schema.INNODB_BUFFER_PAGE "
            f"WHERE SPACE IN ({marks}) AND OLDEST_MODIFICATION > {int(self.dirty_above)} "
            "GROUP BY SPACE"
        )

    def unwritten_pages_query(self, n_spaces: int) -> str:
        """Pages of ``n_spaces`` tablespaces holding a change older than a given LSN that their
        file does not have yet (parameters: pairs of space id and LSN): ``space``, ``dirty``.
        Changes made after the LSN (a writer's, after the conversion) do not count: what the
        conversion wrote is on disk once this reads 0 for its space."""
        each = " OR ".join(["(SPACE = %s AND OLDEST_MODIFICATION <= %s)"] * n_spaces)
        return (
            f"{TAG} SELECT SPACE AS space, COUNT(*) AS dirty "
            "FROM information_schema.INNODB_BUFFER_PAGE "
            f"WHERE OLDEST_MODIFICATION > {int(self.dirty_above)} AND ({each}) "
            "GROUP BY SPACE"
        )

    def statement_time_limit(self, seconds: int) -> tuple[str, tuple[int]]:
        """The statement (and its parameter) after which the server itself stops any statement
        of this session running longer than ``seconds``: the workload probe's bound."""
        raise NotImplementedError

    #: the global variables :meth:`flush_nudge` reads (and may set)
    nudge_variables: ClassVar[tuple[str, ...]] = ("innodb_max_dirty_pages_pct_lwm",)

    def flush_nudge(self, current: Mapping[str, str | None]) -> list[tuple[str, str]]:
        """The global variables to set (server-wide, no lock), in order, with their values,
        that make the page cleaner write the buffer pool's modified pages now, at the rate the
        server's I/O settings allow; empty when it already does. ``current``: the values of
        :attr:`nudge_variables` now (None: unknown). The executor sets them while converted
        tables wait and puts them back, last first, once none does (or the run ends).

        Here, a near-zero low-water mark (``innodb_max_dirty_pages_pct_lwm``; 10% by default
        on MySQL): seen to write a rebuilt table's last pages in 2–6 s on idle MySQL 8.0.33,
        whose page cleaner had left them for minutes. MySQL's rebuild writes nearly all its
        pages itself (5 of 622 left on 8.0.33): raising ``innodb_io_capacity`` as well, or
        nudging at once, did not get those few written sooner (bench/RESULTS.md), so it is
        not done; nor harder (``innodb_max_dirty_pages_pct`` lowered too), which stalled MySQL
        8.0.15's writers 4–9 s."""
        nudge = self._lwm_nudge(current.get("innodb_max_dirty_pages_pct_lwm"))
        return [nudge] if nudge else []

    @staticmethod
    def _capacity_nudge(current: Mapping[str, str | None]) -> tuple[str, str] | None:
        """``innodb_io_capacity`` up to ``innodb_io_capacity_max``, when below it (the
        ceiling itself is never raised)."""
        try:
            capacity = int(current.get("innodb_io_capacity") or 0)
            ceiling = int(current.get("innodb_io_capacity_max") or 0)
        except ValueError:
            return None
        if 0 < capacity < ceiling:
            return ("innodb_io_capacity", str(ceiling))
        return None

    @staticmethod
    def _lwm_nudge(current: str | None) -> tuple[str, str] | None:
        try:
            value = float(current or 0)
        except ValueError:
            return None
        if current is None or 0 < value <= NUDGE_LWM:
            return None
        return ("innodb_max_dirty_pages_pct_lwm", str(NUDGE_LWM))

    def nudge_at_once(self, current: Mapping[str, str | None]) -> bool:
        """Nudge as soon as a converted table waits, rather than after the page cleaner has
        written none of its pages for a while: when it never writes them by itself."""
        return False

    # -- replication (--max-lag) -------------------------------------------------------------------

    @property
    def replica_hosts_query(self) -> str:
        """On a primary: its registered replicas, with ``Host`` (``report_host``, empty when
        the replica set none) and ``Port``."""
        return f"{TAG} SHOW SLAVE HOSTS"

    @property
    def replica_status_query(self) -> str:
        """On a replica: one row about its replication threads (none when it is not one)."""
        return f"{TAG} SHOW SLAVE STATUS"

    @property
    def replica_status_columns(self) -> tuple[str, str]:
        """The columns of :meth:`replica_status_query` that say whether the SQL thread runs
        (``Yes``) and how many seconds it is behind (NULL when it does not run)."""
        return "Slave_SQL_Running", "Seconds_Behind_Master"
