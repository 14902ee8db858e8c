"""Issue 7 benchmark: `ibdtool report` over whole directories against a shell loop of
`ibdtool inspect --json`, and its memory as the number of files grows.

Run by hand:  .venv/bin/python bench/bench_report.py [--small 1000] [--memory 1000,4000]
It builds (once) under bench/work/:
  report-small/  --small sparse copies of samples/*/*.ibd in 20 schema folders;
  report-large/  hard links to big-p16k-plain.ibd and big-p16k-pc_zlib.ibd (1 GiB each), made
                 by `.venv/bin/python samples/make_samples.py --big bench/work --big-size-gb 1`;
  report-mem-N/  N hard links to the small files (no disk space), for the memory series.
Every contender reads from the page cache (each directory is read once first).
Target: report at least 5x faster than the loop on the small-file directory; the main
process's peak RSS with --format jsonl flat in the number of files.

Issue 24 (``--fleet 100000 --fleet-remote N --before COMMIT``): ``report`` over 100,000 files
in 100 schemas, local and ``host:PATH`` over fake ssh, the tree ``--before`` and this one
interleaved, beside ``du -s`` of the same tree: wall, time a file over du, peak RSS.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common import IBDTOOL, REPO, WORK, append_results, run_timed, warm

SCHEMAS = 20
#: runs ibdtool's CLI in this process and prints its own peak RSS (KiB) when it exits, so that
#: the main process is measured apart from its workers
RSS_PROBE = (
    "import atexit,resource,sys;"
    "atexit.register(lambda: print('maxrss', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
    "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr));"
    "from ibdtool.cli import main;sys.argv[0]='ibdtool';main()"
)


def small_dir(n: int) -> Path:
    root = WORK / f"report-small-{n}"
    sources = sorted((REPO / "samples").glob("*/*.ibd"))
    if root.is_dir() and sum(1 for _ in root.glob("*/*.ibd")) == n:
        return root
    shutil.rmtree(root, ignore_errors=True)
    for i in range(n):
        folder = root / f"schema{i % SCHEMAS:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        src = sources[i % len(sources)]
        dst = folder / f"t{i:05d}_{src.parent.name}_{src.stem.replace('-', '_')}.ibd"
        subprocess.run(["cp", "--sparse=always", str(src), str(dst)], check=True)
    return root


def linked_dir(name: str, files: list[Path]) -> Path:
    root = WORK / name
    if root.is_dir() and sum(1 for _ in root.glob("*/*.ibd")) == len(files):
        return root
    shutil.rmtree(root, ignore_errors=True)
    for i, src in enumerate(files):
        folder = root / f"schema{i % SCHEMAS:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        os.link(src, folder / f"t{i:05d}.ibd")
    return root


def large_dir() -> Path | None:
    bigs = [WORK / "big-p16k-plain.ibd", WORK / "big-p16k-pc_zlib.ibd"]
    if not all(p.is_file() for p in bigs):
        return None
    return linked_dir("report-large", bigs)


def tablespaces(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.ibd"))


def warm_dir(root: Path) -> None:
    for p in tablespaces(root):
        warm(p)


def loop_seconds(root: Path) -> float:
    """The shell loop a DBA writes today: one `ibdtool inspect --json` per file."""
    script = 'for f in "$1"/*/*.ibd; do "$2" inspect --json "$f" > /dev/null; done'
    start = time.perf_counter()
    subprocess.run(["bash", "-c", script, "loop", str(root), IBDTOOL[0]], check=True)
    return time.perf_counter() - start


def peak_rss(root: Path, fmt: str) -> tuple[int, int]:
    """(main process, largest worker) peak RSS in KiB of `report ROOT --format FMT`."""
    proc = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, "report", str(root), "--format", fmt],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    line = [x for x in proc.stderr.splitlines() if x.startswith("maxrss")][-1]
    _, main_kib, child_kib = line.split()
    return int(main_kib), int(child_kib)


def directory_rows(label: str, root: Path, loop: bool) -> tuple[list[str], float | None]:
    files = tablespaces(root)
    size = sum(p.stat().st_size for p in files)
    warm_dir(root)
    rows = []
    report_best = None
    for fmt in ("jsonl", "json"):
        best, median, rss = run_timed([*IBDTOOL, "report", str(root), "--format", fmt], repeat=3)
        report_best = best if fmt == "jsonl" else report_best
        rows.append(
            f"| {label} | `report --format {fmt}` | {best:.2f} | {median:.2f} | "
            f"{len(files) / best:,.0f} | {size / 1e9 / best:.2f} | {rss / 1024:.0f} |"
        )
    ratio = None
    if loop:
        seconds = loop_seconds(root)
        rows.append(
            f"| {label} | shell loop of `inspect --json` | {seconds:.2f} | {seconds:.2f} | "
            f"{len(files) / seconds:,.0f} | {size / 1e9 / seconds:.2f} | |"
        )
        ratio = seconds / report_best if report_best else None
    return rows, ratio


# --- issue 24: a fleet of 100,000 files against du -s, before and after, in one run ----------

#: the CLI of the tree ``sys.argv[1]`` (first on the path), printing at exit its wall time,
#: its own peak RSS and its largest child's (KiB), and its own CPU seconds and its children's
TREE_PROBE = (
    "import sys,time;sys.path.insert(0,sys.argv.pop(1));t=time.perf_counter();"
    "import atexit,resource;"
    "u=lambda w: resource.getrusage(w);"
    "cpu=lambda w: u(w).ru_utime+u(w).ru_stime;"
    "atexit.register(lambda: print('probe', time.perf_counter()-t,"
    "u(resource.RUSAGE_SELF).ru_maxrss, u(resource.RUSAGE_CHILDREN).ru_maxrss,"
    "cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), file=sys.stderr));"
    "from ibdtool.cli.main import main;main(prog_name='ibdtool')"
)
#: the ssh of ``host:PATH`` runs: the real agent (sent by the tree measured) run here, its CPU
#: seconds written to ``$IBDTOOL_FAKE_CPU_LOG``; this tree's for every tree measured
FAKE_SSH = REPO / "tests" / "fuzz" / "fake_ssh.py"


def fleet_tree(files: int) -> Path:
    """``files`` tablespaces in 100 schema folders (hard links of one real sample per schema:
    :mod:`tests.fleet_tree`), made once under bench/work."""
    sys.path.insert(0, str(REPO))
    from tests.fleet_tree import build_fleet_tree

    root = WORK / f"fleet-{files}"
    if not root.is_dir():
        build_fleet_tree(root, schemas=100, per_schema=max(1, files // 100))
    return root


@dataclass
class Probe:
    """One run of ``ibdtool``: wall and CPU seconds (its main process, the agents its fake ssh
    ran, its workers: its other children), peak RSS KiB (main process, largest child)."""

    wall: float
    main_kib: int
    child_kib: int
    cpu_main: float
    cpu_agent: float
    cpu_workers: float

    @property
    def cpu(self) -> float:
        return self.cpu_main + self.cpu_agent + self.cpu_workers


def probe(tree: Path, *args: str | Path) -> Probe:
    """One run of ``ibdtool ARGS`` of ``tree`` (:class:`Probe`)."""
    with tempfile.NamedTemporaryFile("r", suffix=".cpu") as log:
        proc = subprocess.run(
            [sys.executable, "-c", TREE_PROBE, str(tree), *map(str, args)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tree,
            env={**os.environ, "IBDTOOL_FAKE_CPU_LOG": log.name},
        )
        agent = sum(float(x) for x in log.read().split())
    line = [x for x in proc.stderr.splitlines() if x.startswith("probe ")][-1]
    _, wall, main_kib, child_kib, cpu_self, cpu_children = line.split()
    return Probe(
        float(wall), int(main_kib), int(child_kib), float(cpu_self), agent,
        float(cpu_children) - agent,
    )  # fmt: skip


def du_seconds(root: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["du", "-s", str(root)], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def fleet_rows(
    files: int, remote_files: int, before: str, formats: list[str], rounds: int = 1
) -> str:
    """Local ``report`` over ``files`` files and ``report host:PATH`` (fake ssh: the real
    agent run here) over ``remote_files``, by the tree ``before`` and this one, interleaved,
    beside ``du -s`` of the same tree."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_issue24 import before_tree

    trees = [("after", REPO)]
    if before != "none":
        trees.insert(0, ("before", before_tree(before)))
    rows = []
    load = [f"{os.getloadavg()[0]:.1f}"]
    for count, remote in ((files, False), (remote_files, True)):
        if not count:
            continue
        root = fleet_tree(count)
        du = min(du_seconds(root) for _ in range(3))
        rows.append(f"| {count:,} | `du -s` | | {du:.2f} | | | | | | | | |")
        for fmt in formats if not remote else ["json"]:
            for label, tree in [t for _ in range(rounds) for t in trees]:
                fake = f"{sys.executable} {FAKE_SSH}"
                where = ["-e", fake, f"bench:{root}"] if remote else [root]
                p = probe(tree, "report", *where, "--format", fmt)
                per_file = (p.wall - du) / count * 1e3
                agent = f"{p.cpu_agent:.1f}" if remote else ""
                rows.append(
                    f"| {count:,} | {'host:PATH' if remote else 'local'} `--format {fmt}` "
                    f"| {label} | {p.wall:.1f} | {p.cpu:.1f} | {p.cpu_main:.1f} | {agent} "
                    f"| {p.cpu_workers:.1f} | {p.cpu / count * 1e3:.2f} | {per_file:.2f} "
                    f"| {p.main_kib / 1024:.0f} | {p.child_kib / 1024:.0f} |"
                )
                load.append(f"{os.getloadavg()[0]:.1f}")
                print(rows[-1], flush=True)
    return "\n".join(
        [
            f"Trees: {files:,} local files, {remote_files:,} over fake ssh, in 100 schema "
            "folders (hard links of one real sample per schema; distinct files to report). "
            f"Before: `{before}`; after: this tree; interleaved, {rounds} run(s) each. Load "
            f"average over the run: {' → '.join(load)} (the machine is shared with other sessions' "
            "test suites: walls are loaded walls).",
            "",
            "| files | command | tree | wall s | CPU s (all processes) | CPU s main | CPU s agent "
            "| CPU s workers | CPU ms a file | wall ms a file over du "
            "| peak RSS MB (main) | peak RSS MB (largest worker) |",
            "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=1000, help="files in the small directory")
    parser.add_argument("--memory", default="1000,4000", help="file counts for the RSS series")
    parser.add_argument(
        "--fleet", type=int, default=0, help="issue 24: files of the local fleet tree (100000)"
    )
    parser.add_argument(
        "--fleet-remote", type=int, default=0, help="issue 24: files read over fake ssh"
    )
    parser.add_argument("--fleet-formats", default="json", help="issue 24: formats, a,b")
    parser.add_argument(
        "--fleet-rounds", type=int, default=1, help="issue 24: runs of each tree, interleaved"
    )
    parser.add_argument(
        "--before",
        default="main",
        help="issue 24: the tree to compare with ('none': this tree only)",
    )
    args = parser.parse_args()
    if args.fleet or args.fleet_remote:
        body = fleet_rows(
            args.fleet, args.fleet_remote, args.before, args.fleet_formats.split(","),
            args.fleet_rounds,
        )  # fmt: skip
        body += (
            "\n\nCommand: `PYTHONPATH=$PWD /work/main/.venv/bin/python bench/bench_report.py "
            f"--fleet {args.fleet} --fleet-remote {args.fleet_remote} "
            f"--fleet-formats {args.fleet_formats} --fleet-rounds {args.fleet_rounds} "
            f"--before {args.before}`"
        )
        append_results("Report: a fleet of files against du -s (issue 24)", body)
        print(body)
        return

    small = small_dir(args.small)
    rows, small_ratio = directory_rows(f"{args.small:,} small files", small, loop=True)
    large = large_dir()
    large_ratio = None
    if large is not None:
        more, large_ratio = directory_rows("2 files of 1 GiB", large, loop=True)
        rows += more
    else:
        print(f"skipping the large directory: make it with samples/make_samples.py --big {WORK}")

    small_files = tablespaces(small)
    mem_rows = []
    for count in (int(x) for x in args.memory.split(",")):
        files = [small_files[i % len(small_files)] for i in range(count)]
        root = linked_dir(f"report-mem-{count}", files)
        warm_dir(small)
        jsonl_main, jsonl_child = peak_rss(root, "jsonl")
        json_main, _ = peak_rss(root, "json")
        mem_rows.append(
            f"| {count:,} | {jsonl_main / 1024:.0f} | {jsonl_child / 1024:.0f} | "
            f"{json_main / 1024:.0f} |"
        )

    body = "\n".join(
        [
            "Directories from the page cache; `report` uses all cores (default `--jobs`).",
            "",
            "| directory | command | best s | median s | files/s | GB/s | peak RSS MB |",
            "|---|---|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"Small-file directory: report is **{small_ratio:.1f}×** faster than the loop "
            "(target ≥ 5×)."
            + (
                f" Large files: {large_ratio:.1f}× (both are bound by the page decoding)."
                if large_ratio
                else ""
            ),
            "",
            "Peak RSS (MB) against the number of files (hard links to the small files):",
            "",
            "| files | jsonl: main process | jsonl: largest worker | json: main process |",
            "|---:|---:|---:|---:|",
            *mem_rows,
            "",
            "`jsonl` writes each row as its file finishes and keeps none; `json` and the other "
            "document formats hold every row until the end.",
            f"Command: `.venv/bin/python bench/bench_report.py --small {args.small} "
            f"--memory {args.memory}`",
        ]
    )
    append_results("Report: whole directories vs a loop of inspect --json", body)
    print(body)


if __name__ == "__main__":
    main()
