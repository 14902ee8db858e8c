"""A DROP that does not stall (issue 22 item 5): ``drop-prepare`` and ``free`` on real files.

Files are punched page by page as page compression leaves them; ``filefrag -v`` counts their
extents. ``free --json`` reports each step as it ends; the test reads the lines as they come
and checks what the tool promises against its own clock: no step frees more extents than asked,
a step over ``--max-stall`` halves the next, each reported stall (with those and the pauses
before it) fits in the time the test saw before that step's line came, and the steps add up to
the file. Speed itself is not asserted (bench/RESULTS.md "Issue 22" has the figures).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.catalog import REPO
from tests.cli_runner import cli_env, ibdtool_command, run_ibdtool
from tests.test_drop_cost import filefrag_extents, punched_file


def free_lines(*args: str | Path) -> tuple[list[tuple[float, dict]], float]:
    """Run ``ibdtool free --json ARGS``; each line with the time it arrived, and the time the
    command took, both on this process's monotonic clock from just before the command started."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        ibdtool_command("free", "--json", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=cli_env(),
    )
    assert proc.stdout is not None
    lines = [(time.monotonic() - t0, json.loads(line)) for line in proc.stdout]
    assert proc.wait(timeout=600) == 0, proc.stderr.read() if proc.stderr else ""
    return lines, time.monotonic() - t0


def test_prepare_then_drop_then_free_in_bounded_steps(tmp_path: Path) -> None:
    table = tmp_path / "t.ibd"
    punched_file(table, 1500)
    n = filefrag_extents(table)
    done = run_ibdtool("drop-prepare", "--json", table)
    assert done.returncode == 0, done.stderr
    link = Path(json.loads(done.stdout)["link"])
    assert link == tmp_path / "t.ibd.ibdtool-drop"
    assert os.stat(link).st_ino == os.stat(table).st_ino and os.stat(link).st_nlink == 2
    os.unlink(table)  # the DROP: only a name goes
    assert filefrag_extents(link) == n
    step_max, pause = 200, 0.05
    lines, wall = free_lines(link, "--extents", str(step_max), "--pause", str(pause))
    steps = [doc for _t, doc in lines if "step" in doc]
    (summary,) = [doc["summary"] for _t, doc in lines if "summary" in doc]
    assert not link.exists() and summary["done"]
    assert sum(s["extents"] for s in steps) == n == summary["extents"]
    assert all(0 < s["extents"] <= step_max for s in steps)
    assert [s["size_before"] for s in steps[1:]] == [s["size_after"] for s in steps[:-1]]
    assert steps[-1]["size_after"] == 0
    assert summary["longest_stall_s"] == max(s["stall_s"] for s in steps)
    # each step's stall, with every stall and pause before it, happened before its line came:
    # the sums are compared with the arrival, never the gap between two arrivals (a line read
    # late, this process waiting for a core under load while the next pause went by, made the
    # gap after it shorter than the stall in it: 2 lines read in one go, a gap of 0)
    arrivals = [t for t, doc in lines if "step" in doc]
    spent = list(itertools.accumulate(s["stall_s"] + pause for s in steps))
    for k, (arrived, before) in enumerate(zip(arrivals, spent, strict=True)):
        assert before - pause <= arrived, (k, before - pause, arrived)
    assert sum(s["stall_s"] for s in steps) + pause * (len(steps) - 1) <= wall


def test_a_slow_step_halves_the_next(tmp_path: Path) -> None:
    link = tmp_path / "t.ibd.ibdtool-drop"
    punched_file(link, 600)
    lines, _ = free_lines(link, "--extents", "128", "--pause", "0", "--max-stall", "0.001")
    steps = [doc for _t, doc in lines if "step" in doc]
    for before, after in itertools.pairwise(steps):
        if before["stall_s"] > 0.001:
            assert after["extents"] <= max(1, before["extents"] // 2)


def test_free_is_resumable(tmp_path: Path) -> None:
    link = tmp_path / "t.ibd.ibdtool-drop"
    punched_file(link, 800)
    n = filefrag_extents(link)
    lines, _ = free_lines(link, "--extents", "100", "--pause", "0", "--max-steps", "2")
    assert not lines[-1][1]["summary"]["done"] and link.exists()
    assert filefrag_extents(link) == n - 200
    lines, _ = free_lines(link, "--extents", "100", "--pause", "0")
    assert lines[-1][1]["summary"]["done"] and not link.exists()


def test_free_refuses_a_file_with_another_name(tmp_path: Path) -> None:
    table = tmp_path / "t.ibd"
    punched_file(table, 50)
    run_ibdtool("drop-prepare", table)
    before = table.stat().st_size
    done = run_ibdtool("free", tmp_path / "t.ibd.ibdtool-drop")
    assert done.returncode == 2 and "2 links" in done.stderr
    assert table.stat().st_size == before and filefrag_extents(table) == 50


def test_free_refuses_an_open_file(tmp_path: Path) -> None:
    link = tmp_path / "t.ibd.ibdtool-drop"
    punched_file(link, 50)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"f = open({str(link)!r}, 'rb'); print('open', flush=True); import sys; "
            "sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"open\n"
        done = run_ibdtool("free", link)
        assert done.returncode == 2 and f"pid {holder.pid}" in done.stderr
        assert "open for reading" in done.stderr and link.stat().st_size == 50 * 16384
    finally:
        holder.communicate(b"")


def test_free_refuses_other_names_and_links(tmp_path: Path) -> None:
    plain = tmp_path / "t.ibd"
    punched_file(plain, 10)
    done = run_ibdtool("free", plain)
    assert done.returncode == 2 and "--any-name" in done.stderr
    sym = tmp_path / "x.ibdtool-drop"
    sym.symlink_to(plain)
    done = run_ibdtool("free", sym)
    assert done.returncode == 2 and "symbolic link" in done.stderr
    assert plain.stat().st_size == 10 * 16384
    # drop-prepare never replaces a name
    (tmp_path / "t.ibd.ibdtool-drop").write_bytes(b"mine")
    done = run_ibdtool("drop-prepare", plain)
    assert done.returncode == 2 and "already exists" in done.stderr
    assert (tmp_path / "t.ibd.ibdtool-drop").read_bytes() == b"mine"
