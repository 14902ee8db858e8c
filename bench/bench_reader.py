"""Issue 2 benchmark: `ibdtool checksum` and `inspect` against MariaDB's innochecksum.

Run by hand:  .venv/bin/python bench/bench_reader.py [FILE]
FILE defaults to bench/work/big-p16k-plain.ibd, made by
`.venv/bin/python samples/make_samples.py --big bench/work --big-size-gb 1`.
Targets: checksum time ratio <= 1.0 against innochecksum; peak RSS < 150 MB on the 1 GB file.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from common import IBDTOOL, WORK, append_results, run_timed, warm


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else WORK / "big-p16k-plain.ibd"
    if not path.is_file():
        raise SystemExit(f"{path}: missing; make it with samples/make_samples.py --big {WORK}")
    innochecksum = shutil.which("innochecksum")
    if innochecksum is None:
        raise SystemExit("innochecksum not found (Debian: mariadb-server)")
    warm(path)
    size_gb = path.stat().st_size / 1e9
    rows = []
    contenders = [
        ("innochecksum (MariaDB 10.11)", [innochecksum, str(path)]),
        ("ibdtool checksum (all cores)", [*IBDTOOL, "checksum", str(path)]),
        ("ibdtool checksum -j 1", [*IBDTOOL, "checksum", "-j", "1", str(path)]),
        ("ibdtool inspect", [*IBDTOOL, "inspect", str(path)]),
        ("ibdtool inspect --json", [*IBDTOOL, "inspect", "--json", str(path)]),
    ]
    results = {}
    for name, cmd in contenders:
        best, median, rss = run_timed(cmd, repeat=5 if "checksum" in name else 3)
        results[name] = best
        rows.append(
            f"| {name} | {best:.3f} | {median:.3f} | {size_gb / best:.2f} | {rss / 1024:.0f} |"
        )
    ratio = results["ibdtool checksum (all cores)"] / results["innochecksum (MariaDB 10.11)"]
    body = "\n".join(
        [
            f"File: `{path.name}`, {path.stat().st_size:,} bytes, from the page cache.",
            "",
            "| command | best s | median s | GB/s | peak RSS MB |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            f"checksum time ratio ibdtool / innochecksum: **{ratio:.2f}** (target <= 1.0).",
            f"Command: `.venv/bin/python bench/bench_reader.py {path}`",
        ]
    )
    append_results("Reader: checksum and inspect vs innochecksum", body)
    print(body)


if __name__ == "__main__":
    main()
