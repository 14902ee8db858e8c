"""Checks that must pass before a conversion touches a table, each with the reason it exists.

A failed ``error`` check refuses the table (nothing is run for it); a ``warning`` is printed and
the run goes on; ``info`` is context. The refusals are the ones that hurt DBAs: a table that is
not InnoDB or lives in a shared tablespace, a codec the server has not loaded (MariaDB then cannot
read the table back), a filesystem block too large for the page size or a filesystem that cannot
punch holes (page compression would save nothing), too little free disk for the rebuild, FULLTEXT
indexes (no online rebuild), ``innodb_read_only_compressed``, ``innodb_file_per_table=OFF`` (the
rebuild would move the table into the system tablespace).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ibdtool.server import localfs
from ibdtool.server.context import Server, on
from ibdtool.server.table_info import TableInfo

if TYPE_CHECKING:
    from ibdtool.server.steps import Target

FREE_SPACE_MARGIN = 1.10  # the rebuild's copy plus a tenth for the online log and extents


@dataclass(frozen=True)
class Check:
    name: str
    severity: str  # "error" | "warning" | "info"
    message: str

    @property
    def refuses(self) -> bool:
        return self.severity == "error"

    def to_json(self) -> dict[str, Any]:
        return {"check": self.name, "severity": self.severity, "message": self.message}


def _human(n: int | None) -> str:
    from ibdtool.present import human_bytes

    return human_bytes(n)


def server_checks(server: Server, target: Target) -> list[Check]:
    """What the server as a whole allows for this target (same for every table)."""
    out: list[Check] = []
    v = server.variables
    flavor = server.flavor
    if on(v.get("read_only")) or on(v.get("innodb_read_only")):
        out.append(Check("read_only", "error", "the server is read-only"))
    if not on(v.get("innodb_file_per_table", "ON")):
        out.append(
            Check(
                "file_per_table",
                "error",
                "innodb_file_per_table is OFF: a rebuild would move the table into the system "
                "tablespace, where page compression does not apply",
            )
        )
    page_size = server.page_size
    if target.kind == "page":
        codec = target.algorithm or ""
        if codec not in flavor.page_codecs:
            known = ", ".join(flavor.page_codecs) or "none"
            out.append(
                Check(
                    "codec",
                    "error",
                    f"{flavor.label} has no page compression with {codec} (it knows: {known})",
                )
            )
        elif not server.has_codec(codec):
            plugin = flavor.codec_plugin(codec) or f"provider_{codec}"
            out.append(
                Check(
                    "codec",
                    "error",
                    f"the {codec} codec is not loaded ({flavor.codec_status(codec)}=OFF): load "
                    f"the {plugin} plugin (plugin_load_add={plugin}) first; a "
                    f"{codec} table cannot even be read while it is missing",
                )
            )
        elif provider := flavor.codec_plugin(codec):
            out.append(
                Check(
                    "codec_plugin",
                    "warning",
                    f"{codec} tables need {provider} loaded at every start: keep "
                    f"plugin_load_add={provider} in the server's configuration",
                )
            )
        punch, how = server.punch_hole
        if punch is False:
            out.append(
                Check(
                    "punch_hole",
                    "error",
                    f"the filesystem cannot punch holes ({how}): page compression saves nothing",
                )
            )
        elif punch is None:
            out.append(Check("punch_hole", "warning", f"punch-hole support {how}"))
        if target.level is not None and not flavor.table_compression_level:
            out.append(
                Check(
                    "level",
                    "error",
                    "MySQL compresses with the global innodb_compression_level at every page "
                    "write; set it in the server configuration instead of in the target",
                )
            )
    if target.kind == "row":
        kbs = (target.key_block_size or 0) * 1024
        if page_size > 16384:
            out.append(
                Check(
                    "page_size",
                    "error",
                    "ROW_FORMAT=COMPRESSED needs innodb_page_size ≤ 16K "
                    f"(it is {page_size // 1024}K)",
                )
            )
        elif kbs > page_size:
            out.append(
                Check(
                    "key_block_size",
                    "error",
                    f"KEY_BLOCK_SIZE={target.key_block_size} is larger than the "
                    f"{page_size // 1024}K pages",
                )
            )
        if flavor.has_read_only_compressed and on(v.get("innodb_read_only_compressed")):
            out.append(
                Check(
                    "read_only_compressed",
                    "error",
                    "innodb_read_only_compressed is ON: the server refuses to write "
                    "ROW_FORMAT=COMPRESSED tables",
                )
            )
        if flavor.has_file_format and (v.get("innodb_file_format") or "").lower() == "antelope":
            out.append(
                Check(
                    "file_format",
                    "error",
                    "innodb_file_format=Antelope: ROW_FORMAT=COMPRESSED needs Barracuda",
                )
            )
    return out


def table_checks(server: Server, table: TableInfo, target: Target, algorithm: str) -> list[Check]:
    """What this table allows (run after :func:`server_checks`)."""
    out: list[Check] = []
    if not table.innodb:
        out.append(
            Check(
                "engine",
                "error",
                f"ENGINE={table.engine or 'none (a view?)'}: only InnoDB tables can be converted",
            )
        )
        return out
    if table.shared_tablespace or (table.spaces and any(s.shared for s in table.spaces)):
        where = table.shared_tablespace or "a shared tablespace"
        out.append(
            Check(
                "tablespace",
                "error",
                f"the table lives in the shared tablespace {where}: compression needs its own "
                "file (ALTER TABLE … TABLESPACE=innodb_file_per_table first)",
            )
        )
    elif not table.spaces:
        out.append(
            Check("tablespace", "warning", "no tablespace found in the InnoDB catalog for it")
        )
    if table.fulltext and algorithm != "copy":
        how = server.flavor.fulltext_rebuild
        out.append(
            Check(
                "fulltext",
                "error",
                f"FULLTEXT index {', '.join(table.fulltext)}: the rebuild {how}, which blocks "
                "writes for its whole length; pass --algorithm copy to accept that",
            )
        )
    if table.spatial and target.kind == "page" and not server.flavor.compresses_rtree:
        out.append(
            Check(
                "spatial",
                "info",
                f"SPATIAL index {', '.join(table.spatial)}: MySQL leaves R-tree pages uncompressed",
            )
        )
    if target.kind == "page":
        page_size = server.page_size
        block = table.fs_block_size or (server.filesystem.block_size if server.filesystem else 0)
        if block and block * 2 > page_size:
            out.append(
                Check(
                    "fs_block",
                    "error",
                    f"the filesystem block ({block // 1024}K) is too large for "
                    f"{page_size // 1024}K pages: a compressed page cannot free a block",
                )
            )
    out += _disk_checks(server, table)
    if table.options.partitioned or len(table.spaces) > 1:
        out.append(Check("partitions", "info", f"{len(table.spaces)} partitions, rebuilt together"))
    if table.fts_spaces:
        n, size = len(table.fts_spaces), table.fts_file_size
        out.append(
            Check(
                "fulltext_tablespaces",
                "info",
                f"the rebuild also rewrites the {n} FULLTEXT tablespaces"
                + (f" ({_human(size)})" if size is not None else "")
                + " as new FTS_<new table id>_… files with the table's new options; the "
                "prediction and the verification are of the table's own file only",
            )
        )
    return out


def _disk_checks(server: Server, table: TableInfo) -> list[Check]:
    size = table.total_file_size  # the FULLTEXT tablespaces are rewritten too
    paths = table.local_paths
    if size is None:
        return []
    if not paths:
        return [
            Check(
                "free_space",
                "warning",
                f"free disk unknown (the datadir is not readable here); the rebuild writes a "
                f"copy of about {_human(size)}",
            )
        ]
    fs = localfs.filesystem(paths[0].parent)
    need = int(size * FREE_SPACE_MARGIN)
    if fs.free_bytes < need:
        return [
            Check(
                "free_space",
                "error",
                f"the rebuild needs about {_human(need)} free on {fs.mount_point or fs.path}; "
                f"{_human(fs.free_bytes)} is free",
            )
        ]
    return [
        Check("free_space", "info", f"{_human(fs.free_bytes)} free for a rebuild of {_human(size)}")
    ]


def drop_checks(
    old: dict[str, Any] | None, new: dict[str, Any] | None, threshold: float
) -> list[Check]:
    """What freeing the extents will cost (:func:`ibdtool.fs.drop_total` of the table's
    files): the rebuild ends by unlinking the old files in the ALTER's thread, and a later DROP
    TABLE frees the new ones. A warning past ``threshold`` seconds, else the figures as info."""
    from ibdtool.present import range_text

    out: list[Check] = []
    for name, cost, when in (
        ("drop_old", old, "the rebuild ends by unlinking the old file"),
        ("drop_new", new, "a later DROP TABLE of the converted table"),
    ):
        if not cost or cost.get("seconds") is None:
            continue
        text = (
            f"{when}: ~{range_text(cost['seconds'], cost['low'], cost['high'])} to free "
            f"{cost['extents']:,} extents"
        )
        if cost["seconds"] > threshold:
            how = (
                "`ibdtool drop-prepare` on the file before it, `ibdtool free` after"
                if name == "drop_old"
                else "`ibdtool drop-prepare` before that DROP, `ibdtool free` after"
            )
            out.append(Check(name, "warning", f"{text}: a stall; to avoid it: {how}"))
        else:
            out.append(Check(name, "info", text))
    return out
