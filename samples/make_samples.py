"""Make the sample tablespaces in samples/ with real, throwaway MariaDB and MySQL servers.

Usage (from the repository root)::

    .venv/bin/python samples/make_samples.py                      # everything, into samples/
    .venv/bin/python samples/make_samples.py --only mysql57       # one server family
    .venv/bin/python samples/make_samples.py --big /tmp/big --big-size-gb 1   # benchmark files

Every server gets one table definition and the same deterministic rows (``generate_rows``);
each variant table is loaded with ``LOAD DATA INFILE``, then all tables of a server are
exported with ``FLUSH TABLES … FOR EXPORT``. While that lock is held each ``.ibd`` is measured
(``stat`` and information_schema) and copied with ``cp --sparse=always``. System tablespaces are
copied after a slow (``innodb_fast_shutdown=0``) shutdown and stored gzip-compressed when that
is under 1 MB. Everything measured goes to ``MANIFEST.json``, with Debian's ``innochecksum -S``
output for each file, as oracle values for tests. Re-running overwrites the outputs of the
families it makes and keeps the manifest entries of the others.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pymysql

try:
    from samples.servers import ServerError, ThrowawayServer, mariadb_server, mysql_server
except ImportError:  # run as a script: samples/ is sys.path[0]
    from servers import ServerError, ThrowawayServer, mariadb_server, mysql_server

HERE = Path(__file__).resolve().parent
MANIFEST_NAME = "MANIFEST.json"
MAX_SAMPLE_BYTES = 1 << 20  # every committed file must stay under 1 MiB
SCHEMA = "samples"
SEED = 20241122
ROW_COLUMNS = ("id", "created", "updated", "customer", "email", "city", "amount", "notes")
MARIADB_CODECS = ("zlib", "lz4", "lzo", "lzma", "bzip2", "snappy")
GROUPS = ("mariadb", "mysql80", "mysql57")

# ---------------------------------------------------------------------------------------------
# SQL, in one place. {t} is a schema-qualified table name, {opts} table options.

SQL_CREATE = """/* ibdtool-samples */ CREATE TABLE {t} (
  id INT NOT NULL,
  created DATE NOT NULL,
  updated DATETIME NOT NULL,
  customer VARCHAR(64) NOT NULL,
  email VARCHAR(96) NOT NULL,
  city VARCHAR(48) NOT NULL,
  amount DECIMAL(12,2) NOT NULL,
  notes TEXT NOT NULL,
  PRIMARY KEY (id),
  KEY idx_customer (customer),
  KEY idx_created_amount (created, amount)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 {opts}"""
SQL_LOAD = (
    "/* ibdtool-samples */ LOAD DATA INFILE %s INTO TABLE {t} CHARACTER SET utf8mb4 "
    "FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n' (" + ", ".join(ROW_COLUMNS) + ")"
)
SQL_UPDATE_EVERY_7TH = (
    "/* ibdtool-samples */ UPDATE {t} SET notes = CONCAT(notes, ' Revised later.'), "
    "updated = updated + INTERVAL 1 DAY WHERE id % 7 = 0"
)
SQL_TABLESPACE = {
    # MariaDB 10.11 and MySQL 5.7: INNODB_SYS_TABLESPACES; MySQL 8.0: INNODB_TABLESPACES.
    "mariadb": "SELECT * FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME = %s",
    "mysql57": "SELECT * FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME = %s",
    "mysql80": "SELECT * FROM information_schema.INNODB_TABLESPACES WHERE NAME = %s",
}
SQL_ALL_TABLESPACES = {
    "mariadb": "SELECT * FROM information_schema.INNODB_SYS_TABLESPACES",
    "mysql57": "SELECT * FROM information_schema.INNODB_SYS_TABLESPACES",
    "mysql80": "SELECT * FROM information_schema.INNODB_TABLESPACES",
}
SETTINGS_VARS = {
    "mariadb": (
        "innodb_page_size",
        "innodb_checksum_algorithm",
        "innodb_compression_algorithm",
        "innodb_compression_level",
        "innodb_file_per_table",
    ),
    "mysql": (
        "innodb_page_size",
        "innodb_checksum_algorithm",
        "innodb_compression_level",
        "innodb_file_per_table",
    ),
}


class SampleError(RuntimeError):
    """Something the samples cannot be made without (a clear message, no traceback)."""


# ---------------------------------------------------------------------------------------------
# Deterministic rows


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_ADJ = _words(
    "quiet old small bright careful early late heavy light quick slow warm cold green "
    "northern patient honest narrow broad simple tired busy empty crowded distant local "
    "yellow wooden famous strange gentle proud modern ancient rough smooth curious silent "
    "narrow friendly formal private public sudden steady"
)
_NOUN = _words(
    "customer order parcel window garden letter river market engine ticket village "
    "teacher report harbour kitchen bridge station meeting invoice shipment farmer doctor "
    "library museum bakery company journey weather morning evening question answer "
    "problem machine printer student captain painter message holiday contract warehouse "
    "bicycle lantern orchard"
)
_VERB = _words(
    "delivered checked opened moved repaired signed carried counted painted watched "
    "cleaned ordered returned noticed followed described visited borrowed finished "
    "promised measured collected approved rejected weighed explained remembered ignored "
    "discovered replaced"
)
_PREP = _words("near behind across before after beside under over within without along past")
_CONN = _words(
    "However, Later, Meanwhile, Then, Still, Afterwards, Usually, Sometimes, Eventually, "
    "Surprisingly, Naturally,"
)
_FIRST = _words(
    "Alice Bruno Chloe Daniel Elena Farid Grace Hugo Irene Jonas Keiko Liam Maria Nadia "
    "Oscar Petra Quinn Rosa Samir Tomas Ursula Victor Wendy Yusuf Zoe"
)
_LAST = _words(
    "Adams Becker Costa Dubois Evans Fischer Garcia Hansen Ivanova Jensen Kowalski Lopez "
    "Moreau Novak Olsen Perez Rossi Schmidt Tanaka Weber"
)
_CITY = _words(
    "Lisbon Porto Lyon Ghent Turin Graz Malmo Tartu Cork Leeds Bergen Krakow Brno Seville "
    "Utrecht Aarhus"
)
_DOMAIN = _words("example.com example.org example.net mail.test")


def _sentence(rng: random.Random) -> str:
    kind = rng.randrange(6)
    a, n1, v, p, n2, a2, n3 = (
        rng.choice(_ADJ),
        rng.choice(_NOUN),
        rng.choice(_VERB),
        rng.choice(_PREP),
        rng.choice(_NOUN),
        rng.choice(_ADJ),
        rng.choice(_NOUN),
    )
    if kind == 0:
        s = f"the {a} {n1} {v} the {n2} {p} the {a2} {n3}"
    elif kind == 1:
        s = f"{rng.choice(_CONN)} a {n1} was {v} {p} the {n2}"
    elif kind == 2:
        s = f"nobody {v} the {a} {n1} until the {n2} was {rng.choice(_VERB)}"
    elif kind == 3:
        s = f"the {n1} {p} the {n2} looked {a} and {a2}"
    elif kind == 4:
        s = f"why was the {a} {n1} {v} so late, asked the {n2}"
    else:
        s = f"every {n1} in the {a} {n2} {v} {rng.randrange(2, 40)} {n3}s"
    return s[0].upper() + s[1:] + "."


def _notes(rng: random.Random, lo: int, hi: int) -> str:
    target = rng.randint(lo, hi)
    out: list[str] = []
    length = -1
    while length < target:
        s = _sentence(rng)
        out.append(s)
        length += len(s) + 1
    return " ".join(out)


def generate_rows(count: int, seed: int = SEED) -> list[tuple[Any, ...]]:
    """The sample rows: (id, created, updated, customer, email, city, amount, notes).

    Deterministic for a given (count, seed); row i does not depend on count. About 420 bytes of
    column data a row, most of it English-like text in ``notes``.
    """
    rng = random.Random(seed)
    rows: list[tuple[Any, ...]] = []
    base = date(2015, 1, 1)
    for i in range(1, count + 1):
        created = base + timedelta(days=rng.randrange(3650))
        updated = datetime(created.year, created.month, created.day) + timedelta(
            seconds=rng.randrange(90 * 86400)
        )
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        customer = f"{first} {last}"
        email = f"{first.lower()}.{last.lower()}{rng.randrange(1000)}@{rng.choice(_DOMAIN)}"
        cents = rng.randrange(100, 5_000_000)
        amount = f"{cents // 100}.{cents % 100:02d}"
        rows.append(
            (
                i,
                created.isoformat(),
                updated.strftime("%Y-%m-%d %H:%M:%S"),
                customer,
                email,
                rng.choice(_CITY),
                amount,
                _notes(rng, 260, 360),
            )
        )
    return rows


def rows_tsv(rows: Iterable[tuple[Any, ...]]) -> bytes:
    """The rows as LOAD DATA's default text format (tab-separated, no escapes needed)."""
    lines = []
    for row in rows:
        fields = [str(v) for v in row]
        if any(c in f for f in fields for c in "\t\n\\"):
            raise SampleError(f"row {row[0]} holds a tab, newline or backslash")
        lines.append("\t".join(fields))
    return ("\n".join(lines) + "\n").encode("utf-8")


# ---------------------------------------------------------------------------------------------
# What to make


@dataclass(frozen=True)
class Variant:
    """One sample table: its file name, table options and how it is prepared."""

    name: str  # output file stem, e.g. "p16k-pc_zlib"
    options: str = ""  # CREATE TABLE options after the charset
    checksum: str | None = None  # MariaDB: innodb_checksum_algorithm set before CREATE
    codec: str | None = None  # MariaDB: innodb_compression_algorithm set before CREATE
    after: tuple[str, ...] = ()  # statements run after loading and a first flush
    rows: int | None = None  # override the server's row count
    description: str = ""

    @property
    def table(self) -> str:
        return "t_" + self.name.replace("-", "_")


@dataclass(frozen=True)
class ServerPlan:
    """One throwaway server and the variants made on it."""

    group: str  # output folder: mariadb | mysql80 | mysql57
    label: str  # e.g. "mariadb-p16k"
    factory: Callable[[], ThrowawayServer]
    rows: int
    variants: tuple[Variant, ...]
    system_files: tuple[str, ...] = ()
    options: tuple[str, ...] = field(default=())

    @property
    def is_mariadb(self) -> bool:
        return self.group == "mariadb"


def _mariadb_variants_16k() -> tuple[Variant, ...]:
    out: list[Variant] = [
        Variant("p16k-plain", checksum="full_crc32", description="full_crc32, not compressed")
    ]
    out += [
        Variant(
            f"p16k-pc_{c}",
            "PAGE_COMPRESSED=1",
            checksum="full_crc32",
            codec=c,
            description=f"full_crc32, PAGE_COMPRESSED=1 with {c} (algorithm in the FSP flags)",
        )
        for c in MARIADB_CODECS
    ]
    out.append(
        Variant(
            "p16k-crc32_plain",
            checksum="crc32",
            description="classic (crc32) format, not compressed",
        )
    )
    out += [
        Variant(
            f"p16k-crc32_pc_{c}",
            "PAGE_COMPRESSED=1",
            checksum="crc32",
            codec=c,
            description=f"classic (crc32) format, PAGE_COMPRESSED=1 with {c} "
            "(type-34354 pages, algorithm in each page)",
        )
        for c in MARIADB_CODECS
    ]
    out += [
        Variant(
            f"p16k-rc_kbs{k}",
            f"ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE={k}",
            checksum="full_crc32",
            rows=ROWS_MARIADB_KBS1 if k == 1 else None,
            description=f"ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE={k} ({k}K physical pages)"
            + (f"; only {ROWS_MARIADB_KBS1} rows (see ROWS_16K)" if k == 1 else ""),
        )
        for k in (1, 4, 8)
    ]
    return tuple(out)


def _mariadb_variants_other(ps: str) -> tuple[Variant, ...]:
    return (
        Variant(f"p{ps}-plain", checksum="full_crc32", description=f"{ps} pages, full_crc32"),
        Variant(
            f"p{ps}-pc_zlib",
            "PAGE_COMPRESSED=1",
            checksum="full_crc32",
            codec="zlib",
            description=f"{ps} pages, full_crc32, PAGE_COMPRESSED=1 zlib",
        ),
    )


def _mysql_variants() -> tuple[Variant, ...]:
    return (
        Variant("plain", description="DYNAMIC, not compressed"),
        Variant("zlib", "COMPRESSION='zlib'", codec="zlib", description="COMPRESSION='zlib'"),
        Variant("lz4", "COMPRESSION='lz4'", codec="lz4", description="COMPRESSION='lz4'"),
        Variant(
            "kbs8",
            "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
            description="ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
        ),
        Variant(
            "kbs4",
            "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4",
            description="ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4",
        ),
        Variant(
            "mixed_zlib_lz4",
            "COMPRESSION='zlib'",
            codec="zlib",
            after=("ALTER TABLE {t} COMPRESSION='lz4'", SQL_UPDATE_EVERY_7TH),
            description="COMPRESSION='zlib', flushed, then ALTER … COMPRESSION='lz4' and an "
            "UPDATE of every 7th row: pages rewritten since are lz4, the rest zlib",
        ),
        Variant(
            "attr_only_zlib",
            after=("ALTER TABLE {t} COMPRESSION='zlib'",),
            codec="zlib",
            description="plain table, flushed, then ALTER … COMPRESSION='zlib' without "
            "OPTIMIZE: the attribute is set but the pages stay uncompressed",
        ),
    )


# Row counts: the same rows for every variant of one server, chosen so each file stays under
# 1 MiB. A file grows page by page until an index segment has used its 32 fragment pages;
# then MariaDB extends it by whole extents at once (to 9 MiB for 16K pages, 2-5 MiB for
# ROW_FORMAT=COMPRESSED), so the counts keep every segment under that cliff with a margin:
# MariaDB 16K KEY_BLOCK_SIZE=4 jumps at ~790 rows, KEY_BLOCK_SIZE=1 at ~125 rows, and
# MySQL 5.7/8.0 KEY_BLOCK_SIZE=4 between 700 and 1000 rows as well.
ROWS_16K = 700  # MariaDB 16K, MySQL 8.0 and 5.7: the same rows in every 16K file
ROWS_MARIADB_KBS1 = 100
ROWS_MARIADB_4K = 1000
ROWS_MARIADB_64K = 600

# information_schema NAMEs of the system tablespaces, by file name (where listed at all).
SYSTEM_TS_NAMES = {
    "ibdata1": ("innodb_system",),
    "mysql.ibd": ("mysql",),
    "undo_001": ("innodb_undo_001",),
    "undo_002": ("innodb_undo_002",),
    "undo001": ("innodb_undo001",),
    "undo002": ("innodb_undo002",),
}

MARIADB_SYSTEM_OPTIONS = (
    "--innodb-undo-tablespaces=2",
    "--innodb-data-file-path=ibdata1:3M:autoextend",
    "--innodb-autoextend-increment=1",
)


def plans(groups: Sequence[str]) -> list[ServerPlan]:
    plugins = [f"provider_{c}" for c in MARIADB_CODECS if c != "zlib"]
    out: list[ServerPlan] = []
    if "mariadb" in groups:
        out.append(
            ServerPlan(
                "mariadb",
                "mariadb-p16k",
                lambda: mariadb_server(plugins=plugins, options=MARIADB_SYSTEM_OPTIONS),
                ROWS_16K,
                _mariadb_variants_16k(),
                system_files=("ibdata1", "undo001", "undo002"),
                options=MARIADB_SYSTEM_OPTIONS,
            )
        )
        out.append(
            ServerPlan(
                "mariadb",
                "mariadb-p4k",
                lambda: mariadb_server(page_size="4k"),
                ROWS_MARIADB_4K,
                _mariadb_variants_other("4k"),
                options=("--innodb-page-size=4k",),
            )
        )
        out.append(
            ServerPlan(
                "mariadb",
                "mariadb-p64k",
                lambda: mariadb_server(page_size="64k"),
                ROWS_MARIADB_64K,
                _mariadb_variants_other("64k"),
                options=("--innodb-page-size=64k",),
            )
        )
    if "mysql80" in groups:
        out.append(
            ServerPlan(
                "mysql80",
                "mysql-8.0.15",
                lambda: mysql_server("8.0.15"),
                ROWS_16K,
                _mysql_variants(),
                system_files=("mysql.ibd", "undo_001", "undo_002", "ibdata1"),
            )
        )
    if "mysql57" in groups:
        out.append(
            ServerPlan(
                "mysql57",
                "mysql-5.7.22",
                lambda: mysql_server("5.7.22"),
                ROWS_16K,
                _mysql_variants(),
                system_files=("ibdata1",),
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# Files


def _stat(path: Path) -> dict[str, int]:
    st = path.stat()
    return {
        "st_size": st.st_size,
        "allocated_size": st.st_blocks * 512,
        "st_blksize": st.st_blksize,
    }


def sparse_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.unlink(missing_ok=True)
    subprocess.run(["cp", "--sparse=always", str(src), str(dst)], check=True)
    os.chmod(dst, 0o644)  # the server makes its files 0640


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gzip_file(src: Path, dst: Path) -> None:
    """Deterministic gzip (no name, mtime 0, level 9)."""
    with (
        src.open("rb") as fin,
        dst.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as fout,
    ):
        shutil.copyfileobj(fin, fout, 1 << 20)


def run_innochecksum(path: Path, shown_as: str | None = None) -> dict[str, Any]:
    """Debian's (MariaDB's) ``innochecksum -S`` on *path*: exit code and raw output.

    The file name in the recorded argv and output is *shown_as* (default: the file's name), so
    the manifest does not depend on temporary paths.
    """
    exe = shutil.which("innochecksum") or "/usr/bin/innochecksum"
    if not Path(exe).is_file():
        return {"available": False}
    cmd = [exe, "-S", str(path)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    version = subprocess.run(
        [exe, "--version"], capture_output=True, text=True, timeout=60, check=False
    ).stdout.strip()
    name = shown_as or path.name
    return {
        "argv": ["innochecksum", "-S", name],
        "version": version,
        "exit_code": res.returncode,
        "stdout": res.stdout.replace(str(path), name),
        "stderr": res.stderr.replace(str(path), name),
    }


# ---------------------------------------------------------------------------------------------
# A light header scan: the sanity check that compressed files hold compressed pages.

MARIADB_ALGOS = {0: "none", 1: "zlib", 2: "lz4", 3: "lzo", 4: "lzma", 5: "bzip2", 6: "snappy"}
MYSQL_ALGOS = {0: "none", 1: "zlib", 2: "lz4"}


def page_sizes(flags: int) -> tuple[int, int]:
    """(logical, physical) page size from FSP flags (FORMATS.md §4.3)."""
    if flags & 0x10:  # MariaDB full_crc32
        logical = 512 << (flags & 0xF)
        return logical, logical
    pss = (flags >> 6) & 0xF
    logical = 16384 if pss == 0 else 512 << pss
    zss = (flags >> 1) & 0xF
    return logical, (logical if zss == 0 else 512 << zss)


def scan_pages(path: Path) -> dict[str, Any]:
    """Count stored page types and compressed pages by algorithm, from page headers only.

    Page types are the raw FIL_PAGE_TYPE numbers as stored (their names differ between vendors,
    FORMATS.md §1.3); MariaDB full_crc32 compressed pages (bit 15 set, size in the low byte) are
    counted under ``"fcrc32_compressed"``. Compressed pages: MySQL type 14 by byte 27 (original
    type at 28..29); MariaDB full_crc32 by FSP flags bits 5-7; classic MariaDB type 34354 by
    bytes 26..33.
    """
    data = path.read_bytes()
    flags = struct.unpack_from(">I", data, 54)[0]
    logical, physical = page_sizes(flags)
    full_crc32 = bool(flags & 0x10)
    types: Counter[str] = Counter()
    comp: Counter[str] = Counter()
    original: Counter[str] = Counter()
    by_algo: dict[str, list[int]] = {}
    zero_pages = 0
    n_pages = len(data) // physical
    for no in range(n_pages):
        page = data[no * physical : (no + 1) * physical]
        if not any(page):
            zero_pages += 1
        ptype = struct.unpack_from(">H", page, 24)[0]
        algo = "none"
        if full_crc32 and ptype & 0x8000:
            types["fcrc32_compressed"] += 1
            algo = MARIADB_ALGOS.get((flags >> 5) & 7, "?")
        else:
            types[str(ptype)] += 1
            if ptype == 14:
                algo = MYSQL_ALGOS.get(page[27], f"?{page[27]}")
                original[str(struct.unpack_from(">H", page, 28)[0])] += 1
            elif ptype in (34354, 37401):
                algo = MARIADB_ALGOS.get(struct.unpack_from(">Q", page, 26)[0], "?")
        comp[algo] += 1
        if algo != "none":
            by_algo.setdefault(algo, []).append(no)
    return {
        "fsp_flags": flags,
        "fsp_flags_hex": f"0x{flags:x}",
        "logical_page_size": logical,
        "physical_page_size": physical,
        "pages": n_pages,
        "all_zero_pages": zero_pages,
        "stored_page_types": dict(sorted(types.items())),
        "compression": dict(sorted(comp.items())),
        "compressed_pages_by_algorithm": by_algo,
        "mysql_type14_original_types": dict(sorted(original.items())),
    }


# ---------------------------------------------------------------------------------------------
# Making one server's samples


def _q1(cur: Any, sql: str, args: Any = None) -> Any:
    cur.execute(sql, args)
    row = cur.fetchone()
    return row[0] if row else None


def _settings(cur: Any, mariadb: bool) -> dict[str, Any]:
    names = SETTINGS_VARS["mariadb" if mariadb else "mysql"]
    cur.execute("SELECT " + ", ".join(f"@@GLOBAL.{n}" for n in names))
    return dict(zip(names, cur.fetchone(), strict=True))


def _jsonable(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, int | float | str) or v is None:
        return v
    return str(v)


def _ts_row(cur: Any, group: str, name: str) -> dict[str, Any] | None:
    cur.execute(SQL_TABLESPACE[group], (name,))
    row = cur.fetchone()
    if row is None:
        return None
    cols = [d[0] for d in cur.description]
    return {c: _jsonable(v) for c, v in zip(cols, row, strict=True)}


def _clear_group(out: Path, group: str) -> None:
    """Remove the previous outputs of *group* so a re-run leaves no stale files."""
    folder = out / group
    if folder.is_dir():
        for p in folder.iterdir():
            if p.suffix in (".ibd", ".cfg"):
                p.unlink()
    sysdir = out / "system"
    if sysdir.is_dir():
        for p in sysdir.glob(f"{group}-*"):
            p.unlink()


def log(msg: str) -> None:
    print(f"[make_samples] {msg}", file=sys.stderr, flush=True)


def make_server_samples(plan: ServerPlan, out: Path) -> tuple[list[dict[str, Any]], list[dict]]:
    """Run *plan*'s server, make its tables and copies; return (entries, skipped)."""
    entries: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    group_dir = out / plan.group
    group_dir.mkdir(parents=True, exist_ok=True)
    ts_dialect = "mariadb" if plan.is_mariadb else plan.group
    t0 = time.monotonic()
    with plan.factory() as srv:
        assert srv.tmpdir is not None and srv.datadir is not None
        log(f"{plan.label}: {srv.server_version} up (pid {srv.pid}, {srv.tmpdir})")
        conn = srv.connect()
        cur = conn.cursor()
        cur.execute(f"CREATE DATABASE {SCHEMA}")
        server_info = {
            "flavor": srv.flavor,
            "version": srv.server_version,
            "label": plan.label,
            "options": list(plan.options),
            "settings_at_start": _settings(cur, plan.is_mariadb),
        }
        rows_files: dict[int, tuple[Path, str]] = {}
        made: list[tuple[Variant, dict[str, Any]]] = []
        for v in plan.variants:
            n = v.rows or plan.rows
            if n not in rows_files:
                data = rows_tsv(generate_rows(n))
                p = srv.tmpdir / f"rows-{n}.tsv"
                p.write_bytes(data)
                rows_files[n] = (p, hashlib.sha256(data).hexdigest())
            t = f"{SCHEMA}.{v.table}"
            if plan.is_mariadb:
                cur.execute(f"SET GLOBAL innodb_checksum_algorithm = {v.checksum or 'full_crc32'}")
                cur.execute(f"SET GLOBAL innodb_compression_algorithm = {v.codec or 'zlib'}")
            settings = _settings(cur, plan.is_mariadb)
            create = SQL_CREATE.format(t=t, opts=v.options).rstrip()
            try:
                cur.execute(create)
            except pymysql.MySQLError as exc:
                skipped.append(
                    {
                        "path": f"{plan.group}/{v.name}.ibd",
                        "reason": f"CREATE TABLE failed: {exc}",
                    }
                )
                log(f"{plan.label}: {v.name}: CREATE failed: {exc}")
                continue
            cur.execute(SQL_LOAD.format(t=t), (str(rows_files[n][0]),))
            cur.execute("SHOW WARNINGS")
            warnings = list(cur.fetchall())
            after: list[str] = []
            if v.after:
                # Write the loaded pages out under the creation settings first, so the later
                # statements change only what they rewrite.
                cur.execute(f"FLUSH TABLES {t} FOR EXPORT")
                cur.execute("UNLOCK TABLES")
                for stmt in v.after:
                    sql = stmt.format(t=t)
                    cur.execute(sql)
                    after.append(sql.replace("/* ibdtool-samples */ ", ""))
            elif plan.is_mariadb and v.checksum == "crc32" and v.codec:
                # Classic page_compressed pages take the algorithm in force when written:
                # write them now, before the next variant changes it.
                cur.execute(f"FLUSH TABLES {t} FOR EXPORT")
                cur.execute("UNLOCK TABLES")
            made.append(
                (
                    v,
                    {
                        "settings_at_create": settings,
                        "create_statement": create.replace("/* ibdtool-samples */ ", ""),
                        "statements_after_load": after,
                        "rows_sha256": rows_files[n][1],
                        "load_warnings": [list(map(_jsonable, w)) for w in warnings],
                    },
                )
            )
            log(f"{plan.label}: {v.name} loaded ({n} rows)")

        # Restore the defaults so nothing below depends on the last variant's settings.
        if plan.is_mariadb:
            cur.execute("SET GLOBAL innodb_checksum_algorithm = full_crc32")
            cur.execute("SET GLOBAL innodb_compression_algorithm = zlib")
        for v, info in made:
            t = f"{SCHEMA}.{v.table}"
            info["rows"] = int(_q1(cur, f"SELECT COUNT(*) FROM {t}"))
            cur.execute(f"SHOW CREATE TABLE {t}")
            info["ddl"] = cur.fetchone()[1]

        # One export lock over all tables; measure and copy while it is held.
        tables = ", ".join(f"{SCHEMA}.{v.table}" for v, _ in made)
        cur.execute(f"FLUSH TABLES {tables} FOR EXPORT")
        try:
            for v, info in made:
                live = srv.file_path(SCHEMA, v.table)
                info["live"] = _stat(live)
                ts = _ts_row(cur, ts_dialect, f"{SCHEMA}/{v.table}")
                info["information_schema"] = ts
                info["fs_block_size"] = ts.get("FS_BLOCK_SIZE") if ts else None
                dst = group_dir / f"{v.name}.ibd"
                sparse_copy(live, dst)
                copied = dst.stat()
                info["copy"] = {
                    "size": copied.st_size,
                    "allocated_size_after_sparse_cp": copied.st_blocks * 512,
                }
                cfg = live.with_suffix(".cfg")
                if cfg.is_file():
                    shutil.copyfile(cfg, group_dir / f"{v.name}.cfg")
                    info["cfg"] = f"{plan.group}/{v.name}.cfg"
        finally:
            cur.execute("UNLOCK TABLES")

        system_ts = []
        if plan.system_files:
            cur.execute(SQL_ALL_TABLESPACES[ts_dialect])
            cols = [d[0] for d in cur.description]
            system_ts = [
                {c: _jsonable(x) for c, x in zip(cols, r, strict=True)}
                for r in cur.fetchall()
                if not str(r[cols.index("NAME")]).startswith(f"{SCHEMA}/")
            ]
            cur.execute("SET GLOBAL innodb_fast_shutdown = 0")
        conn.close()
        srv.stop()  # with system files: a slow shutdown (purge done, all pages written)
        log(f"{plan.label}: stopped after {time.monotonic() - t0:.0f}s")

        for v, info in made:
            path = group_dir / f"{v.name}.ibd"
            entries.append(
                {
                    "path": f"{plan.group}/{v.name}.ibd",
                    "group": plan.group,
                    "kind": "table",
                    "description": v.description,
                    "server": server_info,
                    "table": f"{SCHEMA}.{v.table}",
                    "compression_at_create": (
                        v.codec if v.codec and "COMPRESS" in v.options else None
                    ),
                    **info,
                    "size": path.stat().st_size,
                    "sha256": sha256(path),
                    "innochecksum": run_innochecksum(path),
                    "header_scan": scan_pages(path),
                }
            )
        for name in plan.system_files:
            entry, skip = _system_file(plan, srv, name, out, server_info, system_ts)
            if entry:
                entries.append(entry)
            if skip:
                skipped.append(skip)
    return entries, skipped


def _system_file(
    plan: ServerPlan,
    srv: ThrowawayServer,
    name: str,
    out: Path,
    server_info: dict[str, Any],
    system_ts: list[dict[str, Any]],
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    assert srv.datadir is not None and srv.tmpdir is not None
    live = srv.datadir / name
    rel = f"system/{plan.group}-{name}.gz"
    if not live.is_file():
        return None, {"path": rel, "reason": f"{plan.label} has no {name}"}
    sysdir = out / "system"
    sysdir.mkdir(parents=True, exist_ok=True)
    measured = _stat(live)
    plain = srv.tmpdir / f"copy-{name}"
    sparse_copy(live, plain)
    gz = sysdir / f"{plan.group}-{name}.gz"
    gzip_file(plain, gz)
    gz_size = gz.stat().st_size
    ts_rows = [r for r in system_ts if str(r.get("NAME")) in SYSTEM_TS_NAMES.get(name, ())]
    info = {
        "path": rel,
        "group": plan.group,
        "kind": "system",
        "description": f"{name} of {plan.label}, copied after a slow shutdown",
        "server": server_info,
        "file": name,
        "live_after_shutdown": measured,
        "information_schema_before_shutdown": ts_rows[0] if ts_rows else None,
        "uncompressed_size": plain.stat().st_size,
        "uncompressed_sha256": sha256(plain),
        "copy": {"allocated_size_after_sparse_cp": plain.stat().st_blocks * 512},
        "gz_size": gz_size,
        "innochecksum": run_innochecksum(plain, name),
        "header_scan": scan_pages(plain),
    }
    if gz_size >= MAX_SAMPLE_BYTES:
        gz.unlink()
        return None, {
            "path": rel,
            "reason": f"{name} is {plain.stat().st_size} bytes; gzip -9 gives {gz_size} bytes, "
            f"not under {MAX_SAMPLE_BYTES}",
            "measurements": info,
        }
    return info, None


# ---------------------------------------------------------------------------------------------
# Checks


def check_entries(entries: list[dict[str, Any]]) -> list[str]:
    """Sanity checks on what was made; returns problems (empty if all is well)."""
    problems: list[str] = []
    for e in entries:
        if e["kind"] != "table":
            continue
        path, scan = e["path"], e["header_scan"]
        comp = {k: n for k, n in scan["compression"].items() if k != "none"}
        expected = e["compression_at_create"]
        if e["size"] >= MAX_SAMPLE_BYTES:
            problems.append(f"{path}: {e['size']} bytes, not under {MAX_SAMPLE_BYTES}")
        name = Path(path).stem
        ps = e["settings_at_create"]["innodb_page_size"]
        if scan["logical_page_size"] != int(ps):
            problems.append(f"{path}: page size {scan['logical_page_size']} != server's {ps}")
        if name.startswith("mixed"):
            if not (comp.get("zlib") and comp.get("lz4")):
                problems.append(f"{path}: expected zlib and lz4 pages, found {comp}")
        elif name.startswith("attr_only"):
            # 8.0 rewrites the SDI page when the ALTER changes the table's SDI; that one page is
            # written compressed. Anything more would mean the data pages were rewritten.
            if sum(comp.values()) > 1:
                problems.append(f"{path}: expected at most 1 compressed page, found {comp}")
        elif expected:
            if set(comp) != {expected} or comp[expected] < 2:
                problems.append(f"{path}: expected {expected} pages only, found {comp}")
        elif comp:
            problems.append(f"{path}: expected no compressed pages, found {comp}")
    return problems


# ---------------------------------------------------------------------------------------------
# Big files for benchmarks


BIG_NOTES = 4096


def make_big(out: Path, size_gb: float) -> None:
    """A ≥ size_gb table on MariaDB 16K, plain and PAGE_COMPRESSED zlib, into *out*."""
    out.mkdir(parents=True, exist_ok=True)
    target = int(size_gb * (1 << 30))
    notes = [(i, r[7]) for i, r in enumerate(generate_rows(BIG_NOTES, SEED + 1))]
    first = ", ".join(f"'{w}'" for w in _FIRST)
    last = ", ".join(f"'{w}'" for w in _LAST)
    city = ", ".join(f"'{w}'" for w in _CITY)
    select = (
        "SELECT s.seq, DATE '2015-01-01' + INTERVAL (s.seq * 7919) % 3650 DAY, "
        "TIMESTAMP '2015-01-01 00:00:00' + INTERVAL (s.seq * 104729) % 315360000 SECOND, "
        f"CONCAT(ELT(1 + s.seq % {len(_FIRST)}, {first}), ' ', "
        f"ELT(1 + (s.seq DIV {len(_FIRST)}) % {len(_LAST)}, {last})), "
        "CONCAT(LEFT(MD5(s.seq), 10), '@example.com'), "
        f"ELT(1 + (s.seq * 31) % {len(_CITY)}, {city}), "
        "((s.seq * 2654435761) % 5000000) / 100, "
        "CONCAT(n.notes, ' Ref ', s.seq, '.') "
        f"FROM seq_{{lo}}_to_{{hi}} s JOIN {SCHEMA}.notes_src n ON n.id = s.seq % {BIG_NOTES}"
    )
    variants = (("big-p16k-plain", ""), ("big-p16k-pc_zlib", "PAGE_COMPRESSED=1"))
    entries: list[dict[str, Any]] = []
    with mariadb_server(
        workdir=out,
        run_options=[
            "--innodb-buffer-pool-size=1G",
            "--innodb-log-file-size=1G",
            "--innodb-flush-log-at-trx-commit=0",
            "--innodb-doublewrite=0",
        ],
    ) as srv:
        conn = srv.connect()
        cur = conn.cursor()
        cur.execute(f"CREATE DATABASE {SCHEMA}")
        cur.execute(f"USE {SCHEMA}")  # the SEQUENCE engine's seq_* tables live in every schema
        cur.execute(f"CREATE TABLE {SCHEMA}.notes_src (id INT PRIMARY KEY, notes TEXT NOT NULL)")
        cur.executemany(f"INSERT INTO {SCHEMA}.notes_src VALUES (%s, %s)", notes)
        server_info = {"flavor": srv.flavor, "version": srv.server_version}
        batch = 200_000
        total = 0
        for name, opts in variants:
            table = name.replace("-", "_")
            t = f"{SCHEMA}.{table}"
            settings = _settings(cur, True)
            cur.execute(SQL_CREATE.format(t=t, opts=opts))
            t0 = time.monotonic()
            if total == 0:
                live = srv.file_path(SCHEMA, table)
                while live.stat().st_size < target:
                    cur.execute(
                        "/* ibdtool-samples */ INSERT INTO "
                        + t
                        + " "
                        + select.format(lo=total + 1, hi=total + batch)
                    )
                    total += batch
                    log(f"big: {name}: {total} rows, {live.stat().st_size >> 20} MiB")
            else:
                src = f"{SCHEMA}.{variants[0][0].replace('-', '_')}"
                for lo in range(0, total, batch):
                    cur.execute(
                        f"INSERT INTO {t} SELECT * FROM {src} WHERE id > %s AND id <= %s",
                        (lo, lo + batch),
                    )
                log(f"big: {name}: copied {total} rows")
            log(f"big: {name}: loaded in {time.monotonic() - t0:.0f}s")
            cur.execute(f"SHOW CREATE TABLE {t}")
            ddl = cur.fetchone()[1]
            cur.execute(f"FLUSH TABLES {t} FOR EXPORT")
            try:
                live = srv.file_path(SCHEMA, table)
                measured = _stat(live)
                ts = _ts_row(cur, "mariadb", f"{SCHEMA}/{table}")
                dst = out / f"{name}.ibd"
                sparse_copy(live, dst)
                copy_alloc = dst.stat().st_blocks * 512
            finally:
                cur.execute("UNLOCK TABLES")
            entries.append(
                {
                    "path": dst.name,
                    "server": server_info,
                    "ddl": ddl,
                    "rows": total,
                    "settings_at_create": settings,
                    "live": measured,
                    "information_schema": ts,
                    "copy": {"allocated_size_after_sparse_cp": copy_alloc},
                }
            )
            log(f"big: {dst} {measured}")
        conn.close()
    for e in entries:
        e["innochecksum"] = run_innochecksum(out / e["path"])
    (out / "BIG_MANIFEST.json").write_text(json.dumps({"samples": entries}, indent=1) + "\n")
    log(f"big: wrote {out / 'BIG_MANIFEST.json'}")


# ---------------------------------------------------------------------------------------------
# Main


def write_manifest(
    out: Path, groups: Sequence[str], entries: list[dict], skipped: list[dict]
) -> Path:
    path = out / MANIFEST_NAME
    old: dict[str, Any] = {}
    if path.is_file():
        with contextlib.suppress(ValueError):
            old = json.loads(path.read_text())
    keep = [e for e in old.get("samples", []) if e.get("group") not in groups]
    keep_skipped = [
        s
        for s in old.get("skipped", [])
        if s.get("path", "").split("/")[0] not in groups
        and not any(s.get("path", "").startswith(f"system/{g}-") for g in groups)
    ]
    manifest = {
        "about": "Sample tablespaces made by samples/make_samples.py with real servers; "
        "measurements taken while FLUSH TABLES … FOR EXPORT was held (system files: after a "
        "slow shutdown). See samples/README.md.",
        "generator": "samples/make_samples.py",
        "seed": SEED,
        "samples": sorted(keep + entries, key=lambda e: e["path"]),
        "skipped": sorted(keep_skipped + skipped, key=lambda s: s["path"]),
    }
    path.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default: samples/)")
    ap.add_argument(
        "--only", action="append", choices=GROUPS, help="make only this family (repeatable)"
    )
    ap.add_argument("--big", type=Path, metavar="DIR", help="make the big benchmark files in DIR")
    ap.add_argument("--big-size-gb", type=float, default=1.0, help="size of the big table")
    args = ap.parse_args(argv)
    # SIGTERM becomes SystemExit, so the servers' context managers stop them.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        if args.big:
            make_big(args.big.resolve(), args.big_size_gb)
            if not args.only:
                return 0
        groups = tuple(args.only or GROUPS)
        out: Path = args.out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        entries: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        for g in groups:
            _clear_group(out, g)
        for plan in plans(groups):
            e, s = make_server_samples(plan, out)
            entries += e
            skipped += s
        problems = check_entries(entries)
        path = write_manifest(out, groups, entries, skipped)
        log(f"wrote {path} ({len(entries)} samples, {len(skipped)} skipped)")
        for s in skipped:
            log(f"skipped {s['path']}: {s['reason']}")
        if problems:
            for p in problems:
                log(f"PROBLEM: {p}")
            return 1
        return 0
    except (ServerError, SampleError, subprocess.CalledProcessError, pymysql.MySQLError) as exc:
        print(f"make_samples: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
