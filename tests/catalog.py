"""Read ../shared/corpus/CATALOG.md into expected values for each corpus file.

CATALOG.md was written from an independent pass over the files (see its "How the columns were
computed"); its page-type and checksum tallies are the oracle for the parser tests. The first
sections tally *stored* types (only MySQL encryption hides a real type there: ENCRYPTED), the
mariadb-10.11 and mysql-made sections tally *real* types after decompression and compression
algorithms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"


@dataclass
class CatalogEntry:
    rel: str
    logical: int | None = None
    physical: int | None = None
    size: int | None = None
    flags: int | None = None
    page_types: dict[str, int] = field(default_factory=dict)
    checksums: dict[str, int] = field(default_factory=dict)
    compression: dict[str, int] = field(default_factory=dict)
    notes: str = ""
    #: the catalog's "Server / version" cell, or for the sections made here, the server their
    #: heading names (mysql-made: the version in the file name, mysql5722 → MySQL 5.7.22)
    origin: str = ""

    @property
    def path(self) -> Path:
        return CORPUS / self.rel


def _counts(cell: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in cell.split(","):
        part = part.strip()
        if ":" in part:
            name, n = part.rsplit(":", 1)
            if n.strip().isdigit():
                out[name.strip()] = int(n)
    return out


def _sizes(cell: str) -> tuple[int | None, int | None]:
    nums = [int(x) for x in re.findall(r"\d+", cell)]
    if not nums:
        return None, None
    return nums[0], nums[1] if len(nums) > 1 else nums[0]


def load_catalog() -> list[CatalogEntry]:
    text = (CORPUS / "CATALOG.md").read_text()
    entries: list[CatalogEntry] = []
    header: list[str] = []
    section_server = ""
    for line in text.splitlines():
        if line.startswith("## "):
            made = re.search(r"real (MariaDB [\d.]+) server", line)
            section_server = made[1] if made else "MySQL" if "real MySQL" in line else ""
        if not line.startswith("|"):
            header = [] if not line.strip() else header
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in ("File", "file"):
            header = [c.lower() for c in cells]
            continue
        if not header or set(cells[0]) <= {"-", " "} or not cells[0].startswith("`"):
            continue
        row = dict(zip(header, cells, strict=False))
        rel = row["file"].strip("`")
        if "page types" in row and "(not a tablespace)" in row["page types"]:
            continue
        e = CatalogEntry(rel=rel, notes=row.get("notes", ""))
        e.origin = row.get("server / version") or section_server
        made_by = re.match(r"mysql(\d)(\d)(\d+)-", Path(rel).name)
        if e.origin == "MySQL" and made_by:
            e.origin = "MySQL " + ".".join(made_by.groups())
        size_cell = row.get("page size") or row.get("page size logical / physical") or ""
        e.logical, e.physical = _sizes(size_cell)
        if row.get("size (bytes)", "").isdigit():
            e.size = int(row["size (bytes)"])
        elif row.get("size", "").isdigit():
            e.size = int(row["size"])
        if row.get("fsp flags"):
            e.flags = int(row["fsp flags"], 16)
        e.page_types = _counts(row.get("page types") or row.get("real page types") or "")
        e.checksums = _counts(row.get("checksums", ""))
        e.compression = _counts(row.get("compression", ""))
        entries.append(e)
    return entries
