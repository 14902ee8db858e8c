"""MySQL 5.7 and 8.0: page compression is a table attribute that a rebuild applies.

``ALTER TABLE … COMPRESSION='zlib'`` only tags the table; ``OPTIMIZE TABLE`` (an online INPLACE
rebuild) rewrites the pages, or ``ALTER TABLE … FORCE`` when ``innodb_optimize_fulltext_only``
would make OPTIMIZE skip the rebuild, or for ``--algorithm copy``. Row-format changes rebuild by
themselves. The level is the global ``innodb_compression_level``; zlib and lz4 are built in
(5.7.8+); R-tree pages stay uncompressed; progress comes from performance_schema or the file.

Differences between the versions the tests run (README, "Server versions the tests run"):

* 5.7.22: the ``INNODB_SYS_*`` catalog (``catalog`` ``mysql57``); no SDI.
* 8.0.15: ``INNODB_TABLESPACES``/``INNODB_DATAFILES`` (``mysql8``); partition files still
  ``T#P#Pa#SP#Pasp0``; FILE_SIZE/ALLOCATED_SIZE 0 for non-ASCII names.
* 8.0.17+ (seen on 8.0.33): ``T#p#pa#sp#pasp0``, separators and partition names lower-cased
  (``partition_separator``; ``report`` takes the case back from the SDI).
* 8.0.22+ (seen on 8.0.33): ``SHOW REPLICAS`` / ``SHOW REPLICA STATUS`` with
  ``Replica_SQL_Running``/``Seconds_Behind_Source``; the SLAVE forms warn (1287) and are gone in
  8.4 (``replica_terms``).
* 8.0.33: the page cleaner leaves the last few pages of a rebuilt table in the buffer pool
  (a run ends ``awaiting_flush`` unless ``--flush-for-export``); 8.0.15 writes them at once.
* Every 8.0: ``ALTER TABLE … COMPRESSION=`` rewrites the SDI page, compressed at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ibdtool.parsers import codecs
from ibdtool.parsers.vendor import Vendor
from ibdtool.server import sql
from ibdtool.server.dialects.base import TABLESPACE_COLUMNS, Dialect
from ibdtool.server.sql import TAG
from ibdtool.server.steps import Step

if TYPE_CHECKING:
    from ibdtool.server.steps import PlanSettings, Target
    from ibdtool.server.table_info import TableInfo

PAGE_CODECS = codecs.names(Vendor.MYSQL)


@dataclass(frozen=True)
class MySQL(Dialect):
    name: ClassVar[Vendor] = Vendor.MYSQL
    product: ClassVar[str] = "MySQL"

    @classmethod
    def claims(cls, version: str, comment: str) -> bool:
        return True  # what is not another line is MySQL

    def statement_time_limit(self, seconds: int) -> tuple[str, tuple[int]]:
        """``max_execution_time``, in milliseconds (5.7.8+; SELECT only, which is all the
        probe runs)."""
        return f"{sql.PROBE_TAG} SET SESSION max_execution_time = %s", (seconds * 1000,)

    @property
    def catalog(self) -> str:
        return "mysql8" if self.data_dictionary else "mysql57"

    @property
    def data_dictionary(self) -> bool:
        """8.0's data dictionary: the INNODB_* catalog views replace INNODB_SYS_*."""
        return self.version >= (8, 0, 0)

    @property
    def names_as_written(self) -> bool:
        return self.data_dictionary

    @property
    def replica_terms(self) -> bool:
        """8.0.22 renamed SHOW SLAVE … to SHOW REPLICA… and its columns Slave/Master to
        Replica/Source (the old statements remain, deprecated; 8.0.15 has only those)."""
        return self.version >= (8, 0, 22)

    @property
    def has_file_format(self) -> bool:
        return self.version < (8, 0, 0)

    @property
    def tablespaces_query(self) -> str:
        if not self.data_dictionary:
            return super().tablespaces_query
        return (
            f"{TAG} SELECT {TABLESPACE_COLUMNS}, ts.ZIP_PAGE_SIZE AS zip_page_size, "
            "ts.SPACE_TYPE AS space_type, df.PATH AS path "
            "FROM information_schema.INNODB_TABLESPACES ts "
            "LEFT JOIN information_schema.INNODB_DATAFILES df "
            "ON CAST(df.SPACE AS UNSIGNED) = ts.SPACE"
        )

    @property
    def indexes_of_space_query(self) -> str:
        if not self.data_dictionary:
            return super().indexes_of_space_query
        return (
            f"{TAG} SELECT INDEX_ID AS id, NAME AS name, PAGE_NO AS page_no "
            "FROM information_schema.INNODB_INDEXES WHERE SPACE = %s"
        )

    @property
    def innodb_tables_query(self) -> str:
        if not self.data_dictionary:
            return super().innodb_tables_query
        return (
            f"{TAG} SELECT NAME AS name, SPACE AS space, SPACE_TYPE AS space_type, "
            "ROW_FORMAT AS row_format, ZIP_PAGE_SIZE AS zip_page_size, TABLE_ID AS table_id "
            "FROM information_schema.INNODB_TABLES"
        )

    @property
    def replica_hosts_query(self) -> str:
        return f"{TAG} SHOW REPLICAS" if self.replica_terms else super().replica_hosts_query

    @property
    def replica_status_query(self) -> str:
        if self.replica_terms:
            return f"{TAG} SHOW REPLICA STATUS"
        return super().replica_status_query

    @property
    def replica_status_columns(self) -> tuple[str, str]:
        if self.replica_terms:
            return "Replica_SQL_Running", "Seconds_Behind_Source"
        return super().replica_status_columns

    @property
    def partition_separator(self) -> str:
        # 8.0.17 on (seen on 8.0.33; 8.0.15 writes #P#), with the partition names lower-cased
        return "#p#" if self.version >= (8, 0, 17) else "#P#"

    @property
    def page_codecs(self) -> tuple[str, ...]:
        return PAGE_CODECS if self.version >= (5, 7, 8) else ()

    @property
    def page_compression_is_attribute(self) -> bool:
        return True

    @property
    def compresses_rtree(self) -> bool:
        return False

    @property
    def fulltext_rebuild(self) -> str:
        return "can only use ALGORITHM=COPY"

    def rebuild_steps(
        self,
        table: TableInfo,
        target: Target,
        settings: PlanSettings,
        variables: Mapping[str, str],
    ) -> list[Step]:
        o = table.options
        s, n = table.schema, table.table
        online = self.online(settings)
        if target.kind == "row":
            clauses = ["ROW_FORMAT=COMPRESSED", f"KEY_BLOCK_SIZE={target.key_block_size}"]
            if o.compression:
                clauses.append("COMPRESSION='None'")
            return [
                Step(
                    "rebuild", sql.alter_table(s, n, clauses + online), "rebuild as compressed rows"
                )
            ]
        want = target.algorithm if target.kind == "page" else None
        if o.row_compressed:
            clauses = ["ROW_FORMAT=DYNAMIC", "KEY_BLOCK_SIZE=0"]
            if want:
                clauses.append(f"COMPRESSION='{want}'")
            why = (
                "rebuild with uncompressed rows"
                + (f" and {want} pages" if want else "")
                + ("; indexes may keep KEY_BLOCK_SIZE in SHOW CREATE TABLE, unused with DYNAMIC")
            )
            return [Step("rebuild", sql.alter_table(s, n, clauses + online), why)]
        steps: list[Step] = []
        if (o.compression or None) != want:
            value = want or "None"
            steps.append(
                Step(
                    "attribute",
                    sql.alter_table(s, n, [f"COMPRESSION='{value}'"]),
                    "sets the attribute only: existing pages keep their format",
                )
            )
        fulltext_only = (variables.get("innodb_optimize_fulltext_only") or "").upper() == "ON"
        if settings.algorithm == "copy" or fulltext_only:
            why = (
                "OPTIMIZE would only optimize FULLTEXT (innodb_optimize_fulltext_only=ON)"
                if fulltext_only
                else "rebuild by copy"
            )
            steps.append(Step("rebuild", sql.alter_table(s, n, ["FORCE", *online]), why))
        else:
            steps.append(
                Step(
                    "rebuild",
                    sql.optimize_table(s, n),
                    "rewrites every page with the new attribute (online INPLACE rebuild)",
                )
            )
        return steps
