"""Real tablespaces to damage: their bytes and the geometry the mutators aim with."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ibdtool.parsers.space import sdi_offset
from ibdtool.tablespace.reader import Tablespace
from tests.catalog import CORPUS, REPO

#: name -> path; corpus files are under ../shared/corpus, samples/ files under the repo
FILES = {
    "mysql8-plain": "corpus:mysql-made/mysql8015-t_plain_1k.ibd",
    "mysql57-zlib14": "corpus:mysql-made/mysql5722-t_zlib_1k.ibd",
    "mariadb-fcrc32-lz4": "corpus:mariadb-10.11/p16k-pc_lz4-1000rows.ibd",
    "mariadb-classic-zlib": "corpus:mariadb-10.11/p16k-crc32_pc_zlib-1000rows.ibd",
    "mysql8-zip-kbs8": "corpus:mysql-made/mysql8015-t_kbs8_1k.ibd",
}
#: the harness fuzzes these too: other page sizes and KEY_BLOCK_SIZEs
MORE_FILES = {
    "mariadb-zip-kbs1": "samples:mariadb/p16k-rc_kbs1.ibd",
    "mysql57-zip-kbs4": "samples:mysql57/kbs4.ibd",
    "mysql8-zip-kbs4": "samples:mysql80/kbs4.ibd",
    "mariadb-p4k-plain": "corpus:mariadb-10.11/p4k-plain-1000rows.ibd",
    "mariadb-p64k-zlib": "corpus:mariadb-10.11/p64k-pc_zlib-1000rows.ibd",
    # long values on LOB_FIRST/LOB_DATA chains that records follows (MySQL 8.0.40, an SDI)
    "mysql8-lob": "corpus:ibdNinja/8.0/blob_external.ibd",
}
FUZZ_FILES = {**FILES, **MORE_FILES}


def path_of(kind: str) -> Path:
    where, rel = FUZZ_FILES[kind].split(":", 1)
    path = (CORPUS if where == "corpus" else REPO / "samples") / rel
    if not path.is_file():
        raise FileNotFoundError(f"fuzz input {path} is missing (the corpus is ../shared/corpus)")
    return path


@dataclass(frozen=True)
class Original:
    """A real file's bytes and the geometry the mutators need."""

    kind: str
    data: bytes
    physical: int
    logical: int
    n_pages: int
    sdi_root: int | None
    full_crc32: bool

    @property
    def sdi_pointer(self) -> int:
        """Offset of the SDI version (then root page number) on page 0 (§4.1)."""
        return sdi_offset(self.logical, self.physical)

    @property
    def zip(self) -> bool:
        return self.physical < self.logical


@cache
def original(kind: str) -> Original:
    path = path_of(kind)
    with Tablespace(path) as ts:
        return Original(
            kind,
            path.read_bytes(),
            ts.physical_size,
            ts.logical_size,
            ts.n_pages,
            ts.format.sdi_root,
            ts.format.full_crc32,
        )
