"""Shared helpers for the benchmarks: machine description, timing of commands, RESULTS.md."""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / "work"
RESULTS = BENCH / "RESULTS.md"
#: the repository's own ibdtool; from a worktree without a .venv, this Python with the tree on
#: PYTHONPATH (``PYTHONPATH=$PWD /work/main/.venv/bin/python bench/…``)
_SCRIPT = REPO / ".venv" / "bin" / "ibdtool"
IBDTOOL = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "ibdtool.cli"]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0]
    return (
        f"{platform.node()}: {cpu}, {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}, load average {load:.2f} at start"
    )


def run_timed(cmd: list[str], repeat: int = 5) -> tuple[float, float, int]:
    """(best wall s, median wall s, peak RSS of the command and its children in KiB)."""
    walls = []
    peak = 0
    for _ in range(repeat):
        probe = (
            "import resource,subprocess,sys,time;t=time.perf_counter();"
            "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL);"
            "w=time.perf_counter()-t;"
            "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)"
        )
        out = subprocess.run(
            [sys.executable, "-c", probe, *cmd], capture_output=True, text=True, check=True
        ).stdout.split()
        wall, rss, rc = float(out[0]), int(out[1]), int(out[2])
        if rc not in (0, 1):
            raise SystemExit(f"{cmd} exited {rc}")
        walls.append(wall)
        peak = max(peak, rss)
    return min(walls), statistics.median(walls), peak


def measure(cmd: list[str], repeat: int = 5) -> dict[str, float]:
    """Wall and CPU seconds (user + system, the command's children included) of ``cmd``: min
    and median of ``repeat`` runs, with the 1-minute load average before the first. On a shared
    machine CPU time is the steadier figure: wall time grows with everyone else's work."""
    load = os.getloadavg()[0]
    walls, cpus = [], []
    probe = (
        "import resource,subprocess,sys,time;t=time.perf_counter();"
        "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL);"
        "w=time.perf_counter()-t;u=resource.getrusage(resource.RUSAGE_CHILDREN);"
        "print(w, u.ru_utime+u.ru_stime, r.returncode)"
    )
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", probe, *cmd], capture_output=True, text=True, check=True
        ).stdout.split()
        if int(out[2]) not in (0, 1):
            raise SystemExit(f"{cmd} exited {out[2]}")
        walls.append(float(out[0]))
        cpus.append(float(out[1]))
    return {
        "wall_min": min(walls),
        "wall_med": statistics.median(walls),
        "cpu_min": min(cpus),
        "cpu_med": statistics.median(cpus),
        "load": load,
    }


def warm(path: Path) -> None:
    """Read the file once so every contender starts from the page cache."""
    with path.open("rb") as f:
        while f.read(1 << 24):
            pass


def append_results(title: str, body: str) -> None:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    section = f"\n## {title} ({stamp})\n\nMachine: {machine()}\n\n{body.strip()}\n"
    # appended, never replacing an earlier run's section: RESULTS.md is the record of every
    # run (before and after, loaded and quiet) and the analysis written under a section is
    # not the script's to delete
    RESULTS.write_text(text.rstrip() + "\n" + section)


def append_subsection(title: str, subtitle: str, body: str) -> None:
    """``### subtitle`` under ``## title`` in RESULTS.md, replacing an earlier one of the same
    subtitle and leaving the section's other subsections alone (sessions share a section);
    the section is created at the end when missing."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    sub = f"\n### {subtitle} ({stamp})\n\n{body.strip()}\n"
    head = re.compile(rf"\n## {re.escape(title)}[^\n]*\n")
    found = head.search(text)
    if found is None:
        RESULTS.write_text(text.rstrip() + f"\n\n## {title}\n" + sub)
        return
    nxt = re.compile(r"\n## ").search(text, found.end())
    end = nxt.start() if nxt else len(text)
    section = text[found.end() : end]
    old = re.compile(rf"\n?### {re.escape(subtitle)} \(.*?(?=\n### |\Z)", re.S)
    section = old.sub("", section).rstrip() + "\n" + sub
    RESULTS.write_text(text[: found.end()] + "\n" + section.lstrip("\n") + text[end:])


def rusage_self_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def now() -> float:
    return time.perf_counter()


# --- benchmark files made from the samples' real pages ------------------------------------------

#: The issue-14 files: 89,088 16K pages (1.46 GB) each, MariaDB 10.11's own pages repeated.
BENCH_PAGES = 89_088
SOURCES = {
    "big-plain.ibd": REPO / "samples" / "mariadb" / "p16k-plain.ibd",  # full_crc32, plain
    "big-fcrc32-zlib.ibd": REPO / "samples" / "mariadb" / "p16k-pc_zlib.ibd",  # full_crc32
    "big-classic-zlib.ibd": REPO / "samples" / "mariadb" / "p16k-crc32_pc_zlib.ibd",  # crc32
}


def _renumber(page: bytes, page_no: int, psize: int, full_crc32: bool) -> bytes:
    """``page`` as the server would have written it at ``page_no``: the page number set and
    every checksum recomputed (classic page_compressed images are re-deflated as MariaDB does)."""
    import zlib

    from ibdtool.parsers.checksum import crc32_page
    from ibdtool.parsers.codecs import codec
    from ibdtool.parsers.crc32c_fast import crc32c
    from ibdtool.parsers.envelope import fcrc32_stored_size

    p = bytearray(page)
    if not any(p):
        return page
    p[4:8] = page_no.to_bytes(4, "big")
    ptype = int.from_bytes(p[24:26], "big")
    if full_crc32:
        size = fcrc32_stored_size(ptype, psize) if ptype & 0x8000 else psize
        assert size is not None
        p[size - 4 : size] = crc32c(bytes(p[: size - 4])).to_bytes(4, "big")
        return bytes(p)
    if ptype == 34354:  # MariaDB classic page_compressed zlib (§3.1): the page is inside
        length = int.from_bytes(p[38:40], "big")
        inner = bytearray(zlib.decompress(bytes(p[40 : 40 + length])))
        inner[4:8] = p[4:8]
        crc = crc32_page(inner, psize).to_bytes(4, "big")
        inner[0:4] = inner[psize - 8 : psize - 4] = crc
        payload = codec("zlib").compress(bytes(inner), 6, vendor="mariadb")
        p[38:40] = len(payload).to_bytes(2, "big")
        p[40:] = payload + bytes(psize - 40 - len(payload))
        return bytes(p)
    crc = crc32_page(p, psize).to_bytes(4, "big")
    p[0:4] = p[psize - 8 : psize - 4] = crc
    return bytes(p)


def bench_dir(pages: int) -> Path:
    """Where :func:`make_bench_file` keeps files of ``pages`` pages: bench/work for the
    issue-14 size, a subdirectory for the small ones of a quick try (so that a ``--pages``
    run never remakes the big files other benches use)."""
    return WORK if pages == BENCH_PAGES else WORK / f"pages-{pages}"


def make_bench_file(
    name: str, pages: int = BENCH_PAGES, work: Path | None = None, *, all_used: bool = False
) -> Path:
    """``work/name``: page 0–3 of its sample, then the sample's other written pages repeated
    to ``pages``, each renumbered with valid checksums; zero tails punched as MariaDB punches
    them (``fallocate --dig-holes``), in ``work`` (default :func:`bench_dir`). Kept between
    runs (remade when the page count differs).
    The extent descriptors past page 0 are data pages here, so free-page figures are not real.
    ``all_used``: the free limit set to the file's end too (default: the sample's), so that
    every page counts as used (the rebuild plan reads them all; else it sees the sample's
    pages alone and the rest as free); kept in ``work/used``."""
    from ibdtool.parsers.space import detect_format
    from ibdtool.parsers.structs import FSP_HEADER_OFFSET

    fsp_size_at = FSP_HEADER_OFFSET + 8  # after the space id and a word not used

    work = bench_dir(pages) if work is None else work
    if all_used:
        work = work / "used"
    dst = work / name
    src = SOURCES[name].read_bytes()
    fmt = detect_format(lambda off, n: src[off : off + n], len(src))
    psize = fmt.physical_size
    if dst.exists() and dst.stat().st_size == pages * psize:
        return dst
    work.mkdir(parents=True, exist_ok=True)
    all_pages = [src[i : i + psize] for i in range(0, len(src), psize)]
    body = [p for p in all_pages[4:] if any(p)]
    part = dst.with_suffix(".part")
    block = os.statvfs(work).f_bsize
    zero = bytes(block)
    with part.open("wb") as f:
        for n in range(pages):
            page = all_pages[n] if n < 4 else body[(n - 4) % len(body)]
            if n == 0:
                p0 = bytearray(page)
                p0[fsp_size_at : fsp_size_at + 4] = pages.to_bytes(4, "big")
                if all_used:  # FSP_FREE_LIMIT follows FSP_SIZE; no extent described free
                    p0[fsp_size_at + 4 : fsp_size_at + 8] = pages.to_bytes(4, "big")
                    xdes = FSP_HEADER_OFFSET + 112  # the descriptors: 40 bytes each (16K)
                    for at in range(xdes, xdes + 40 * (psize // 64), 40):
                        # XDES_STATE (at 20) XDES_FULL_FRAG; the bitmap: no page free
                        p0[at : at + 40] = bytes(20) + (3).to_bytes(4, "big") + bytes(16)
                page = bytes(p0)
            page = _renumber(page, n, psize, fmt.full_crc32)
            # only the blocks that are not all zeros, as ``fallocate --dig-holes`` leaves the
            # file (a million-page file is never written dense: 16 GiB of zeros to punch)
            for off in range(0, psize, block):
                chunk = page[off : off + block]
                if chunk != zero[: len(chunk)]:
                    f.seek(n * psize + off)
                    f.write(chunk)
        f.truncate(pages * psize)
    part.rename(dst)
    return dst
