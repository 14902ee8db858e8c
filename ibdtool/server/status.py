"""What ``ibdtool server status`` reports: the server's compression-relevant facts in one place.

Flavor and version; innodb_page_size, file-per-table, checksum algorithm, compression algorithm
and level; which codecs the server can use (``Innodb_have_*`` on MariaDB; zlib and lz4 are built
into MySQL); punch-hole support and the filesystem block size (from the server, else from the
local datadir); performance_schema and its stage consumer; TLS of this connection.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ibdtool.parsers.vendor import Vendor
from ibdtool.server import sql
from ibdtool.server.context import Server, on
from ibdtool.server.errors import ServerError
from ibdtool.server.tables import read_tablespaces


@dataclass
class ServerStatus:
    flavor: Vendor
    version: str
    version_string: str
    connection: str
    hostname: str
    datadir: str
    datadir_local: str | None
    page_size: int
    file_per_table: bool
    checksum_algorithm: str | None
    compression_algorithm: str | None
    compression_level: int | None
    default_row_format: str | None
    read_only_compressed: bool | None
    codecs: dict[str, bool]
    codec_plugins: dict[str, str]
    punch_hole: bool | None
    punch_hole_source: str
    fs_block_size: int | None
    fs_block_source: str
    filesystem: str | None
    free_bytes: int | None
    performance_schema: bool
    stage_consumer: bool | None
    tls_cipher: str | None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def server_status(server: Server) -> ServerStatus:
    v = server.variables
    flavor = server.flavor
    codecs = {c: server.has_codec(c) for c in flavor.page_codecs}
    plugins: dict[str, str] = {}
    if flavor.codec_plugins:
        for row in server.session.query(sql.CODEC_PLUGINS):
            plugins[str(row["name"])] = str(row["status"])
    punch, punch_how = server.punch_hole
    block, block_how = _fs_block(server)
    fs = server.filesystem
    stage_consumer: bool | None = None
    if server.performance_schema:
        try:
            rows = server.session.query(sql.PFS_CONSUMERS)
            stage_consumer = any(
                r["name"] == "events_stages_current" and on(r["enabled"]) for r in rows
            )
        except ServerError:
            stage_consumer = None
    cipher = None
    for row in server.session.query(sql.SESSION_TLS):
        if row["Variable_name"] == "Ssl_cipher" and row["Value"]:
            cipher = str(row["Value"])
    level = v.get("innodb_compression_level")
    status = ServerStatus(
        flavor=flavor.name,
        version=".".join(map(str, flavor.version)),
        version_string=flavor.version_string,
        connection=server.opts.describe(),
        hostname=server.hostname,
        datadir=server.server_datadir,
        datadir_local=str(server.local_datadir) if server.local_datadir else None,
        page_size=server.page_size,
        file_per_table=on(v.get("innodb_file_per_table")),
        checksum_algorithm=v.get("innodb_checksum_algorithm"),
        compression_algorithm=v.get("innodb_compression_algorithm"),
        compression_level=int(level) if level and level.isdigit() else None,
        default_row_format=v.get("innodb_default_row_format"),
        read_only_compressed=on(v["innodb_read_only_compressed"])
        if "innodb_read_only_compressed" in v
        else None,
        codecs=codecs,
        codec_plugins=plugins,
        punch_hole=punch,
        punch_hole_source=punch_how,
        fs_block_size=block,
        fs_block_source=block_how,
        filesystem=fs.fstype if fs else None,
        free_bytes=fs.free_bytes if fs else None,
        performance_schema=server.performance_schema,
        stage_consumer=stage_consumer,
        tls_cipher=cipher,
    )
    status.warnings = _warnings(server, status)
    return status


def _fs_block(server: Server) -> tuple[int | None, str]:
    """The block size the server reports for its tablespaces (most common), else statvfs."""
    try:
        sizes = Counter(s.fs_block_size for s in read_tablespaces(server) if s.fs_block_size)
    except ServerError:
        sizes = Counter()
    if sizes:
        return sizes.most_common(1)[0][0], "FS_BLOCK_SIZE of the server's tablespaces"
    if server.filesystem is not None:
        return server.filesystem.block_size, "statvfs of the local datadir"
    return None, "unknown"


def _warnings(server: Server, st: ServerStatus) -> list[str]:
    out: list[str] = []
    if st.fs_block_size and st.fs_block_size * 2 > st.page_size:
        out.append(
            f"{st.fs_block_size // 1024}K filesystem blocks with {st.page_size // 1024}K pages: "
            "page compression cannot save anything"
        )
    if st.punch_hole is False:
        out.append("no punch-hole support: page compression saves no disk space here")
    if not st.file_per_table:
        out.append("innodb_file_per_table=OFF: new and rebuilt tables go to the system tablespace")
    missing = [c for c, ok in st.codecs.items() if not ok]
    if missing:
        out.append(
            "codecs not loaded: "
            + ", ".join(missing)
            + " (tables using them cannot be read until the provider plugin is loaded)"
        )
    if st.read_only_compressed:
        out.append("innodb_read_only_compressed=ON: ROW_FORMAT=COMPRESSED tables are read-only")
    if not st.performance_schema:
        out.append(
            "performance_schema is OFF: ALTER progress comes from PROCESSLIST (COPY only) or "
            "from the growth of the new file"
        )
    if st.filesystem in ("xfs", "btrfs"):
        out.append(
            f"{st.filesystem}: DROP TABLE of a hole-punched file is several times slower than of "
            "a plain one (mariadb.org: XFS 62 s vs 6.7 s, btrfs 13.8 s vs 1.7 s)"
        )
    return out
