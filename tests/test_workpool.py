"""A worker process that dies (OOM killer, ``kill -9``) is an error for its task, never a hang.

Workers really die by SIGKILL: in the pool's own test the task function kills its process; for
``report`` and ``simulate`` the documented hook ``IBDTOOL_TEST_KILL_WORKER`` makes the worker
handed a given file kill itself. Oracles: the rows and results of the files no worker died on
are those of a run without the hook.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from ibdtool.errors import InputError
from ibdtool.tablespace.pages_json import json_lines
from ibdtool.workers import KILL_HOOK, WorkerPool
from tests.samples_manifest import sample
from tests.test_copy_remote import IBDTOOL, REPO

PAGE = 16384


def _square_or_die(n: int) -> int:
    if n % 3 == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return n * n


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_dead_workers_fail_only_their_tasks(depth: int) -> None:
    """With ``depth`` > 1 a worker that dies holds tasks it had not begun: they are run by
    the next worker, not failed with it."""
    died = lambda n, why: -n if "signal 9" in why else 0  # noqa: E731
    with WorkerPool(_square_or_die, 2, died=died, depth=depth) as pool:
        got = sorted(pool.map_unordered(range(1, 31)))
    expected = sorted(-n if n % 3 == 0 else n * n for n in range(1, 31))
    assert got == expected
    assert not pool.workers  # every worker, replacements too, ended and reaped


def _echo_reversed(data: bytes) -> bytes:
    return data[::-1] * 4


def test_large_tasks_and_results_at_depth_two_never_block() -> None:
    """A task too large to wait in a pipe (over QUEUED_TASK_MAX) goes only to an idle worker:
    a parent blocked writing it to a busy worker, which is blocked writing a result larger
    than the pipe, would wait forever. Results are four times the task; an alarm ends a hang."""
    tasks = [bytes([n]) * size for n, size in enumerate([300_000, 10, 200_000, 70_000, 5] * 4)]

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("the pool hung")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        with WorkerPool(_echo_reversed, 2, died=lambda t, why: b"", depth=2) as pool:
            got = sorted(pool.map_unordered(tasks))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert got == sorted(t[::-1] * 4 for t in tasks)


def _env_run(*args: str, kill: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop(KILL_HOOK, None)
    if kill:
        env[KILL_HOOK] = kill
    return subprocess.run(
        [*IBDTOOL, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )


def _datadir(tmp_path: Path) -> Path:
    d = tmp_path / "db"
    d.mkdir()
    for rel in ["mariadb/p16k-pc_zlib.ibd", "mariadb/p16k-pc_lz4.ibd", "mysql80/zlib.ibd",
                "mysql57/zlib.ibd", "mariadb/p16k-plain.ibd"]:  # fmt: skip
        shutil.copyfile(sample(rel), d / rel.replace("/", "-"))
    return d


def _rows(res: subprocess.CompletedProcess[str]) -> dict[str, dict[str, object]]:
    return {Path(str(r["path"])).name: r for r in json.loads(res.stdout)["tablespaces"]}


def test_report_row_of_a_killed_worker_is_an_error(tmp_path: Path) -> None:
    d = _datadir(tmp_path)
    victim = "mysql80-zlib.ibd"
    clean = _env_run("report", "--jobs", "2", "--format", "json", str(d), kill=None)
    res = _env_run("report", "--jobs", "2", "--format", "json", str(d), kill=victim)
    assert (clean.returncode, res.returncode) == (0, 2), res.stderr
    rows, expected = _rows(res), _rows(clean)
    assert sorted(rows) == sorted(expected)
    assert "killed by signal 9" in str(rows[victim]["error"])
    assert rows[victim]["logical_size"] == os.path.getsize(d / victim)
    for name, row in rows.items():
        if name != victim:
            assert row == expected[name]


def test_report_finishes_when_every_worker_dies(tmp_path: Path) -> None:
    d = _datadir(tmp_path)
    res = _env_run("report", "--jobs", "2", "--format", "json", str(d), kill=str(d))
    assert res.returncode == 2
    rows = _rows(res)
    assert len(rows) == 5 and all("killed by signal 9" in str(r["error"]) for r in rows.values())


def test_simulate_of_a_file_whose_worker_died_is_an_error(tmp_path: Path) -> None:
    """Files over 256 pages are simulated in worker processes (the zero tail adds pages): the
    pages as they are (--as-is; a rebuilt file's pages are synthesised in the process)."""
    a, b = tmp_path / "a.ibd", tmp_path / "b.ibd"
    for rel, path in (("mariadb/p16k-plain.ibd", a), ("mysql80/zlib.ibd", b)):
        shutil.copyfile(sample(rel), path)
        os.truncate(path, 300 * PAGE)
    args = ["simulate", "--full", "--as-is", "-j", "2", "--json", str(a), str(b)]
    clean = _env_run(*args, kill=None)
    res = _env_run(*args, kill="a.ibd")
    assert (clean.returncode, res.returncode) == (0, 2), res.stderr
    assert res.stderr.startswith(f"ibdtool: error: {a}: worker process ")
    assert "killed by signal 9" in res.stderr and res.stderr.count("\n") == 1
    docs = json.loads(res.stdout)  # the failed file is an error object in the list (--json)
    assert [d for d in docs if "error" in d] == [
        {"path": str(a), "error": res.stderr.removeprefix("ibdtool: error: ").strip()}
    ]
    got = [d for d in docs if "error" not in d]
    want = [d for d in json.loads(clean.stdout) if d["path"] == str(b)]
    for doc in [*got, *want]:  # CPU time per page differs between runs
        doc.pop("cost")  # (so may the pages it was measured on)
        for r in doc["results"]:
            r.pop("compress_us_per_page"), r.pop("decompress_us_per_page")
            r.pop("compress_cost"), r.pop("decompress_cost"), r.pop("scan_decompress_cpu_s")
        for rec in doc["recommendations"]:  # and so can the cheapest algorithm
            rec.pop("cheapest"), rec.pop("cost_certainty"), rec.pop("cost_ties")
            rec.pop("good_enough")  # the cheapest codec that saves enough: chosen by CPU too
            rec["best"].pop("cost")
    assert got == want


def test_checksum_split_over_processes_fails_when_one_dies(tmp_path: Path) -> None:
    """A file of 8,192 pages or more is checked by forked children
    (``ibdtool.tablespace.parallel``)."""
    big = tmp_path / "big.ibd"
    shutil.copyfile(sample("mariadb/p16k-plain.ibd"), big)
    os.truncate(big, 8192 * PAGE)
    assert _env_run("checksum", "-j", "2", str(big), kill=None).returncode == 0
    res = _env_run("checksum", "-j", "2", str(big), kill="big.ibd")
    assert res.returncode == 2
    assert res.stderr.startswith(f"ibdtool: error: {big}: worker process ")
    assert "killed by signal 9" in res.stderr and res.stderr.count("\n") == 1


def _children() -> set[int]:
    """This process's children, zombies included (each thread's list in /proc)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


def _big_file(tmp_path: Path) -> Path:
    big = tmp_path / "big.ibd"
    shutil.copyfile(sample("mariadb/p16k-pc_zlib.ibd"), big)
    os.truncate(big, 9000 * PAGE)  # the rest a hole: zero pages, counted without a read
    return big


def test_pages_json_split_over_processes_fails_when_one_dies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pages --json`` hands every other block to a forked child
    (``tablespace.parallel.ordered_map``): one that dies is a one-line error at its turn, after the
    blocks before it."""
    big = _big_file(tmp_path)
    whole = "".join(json_lines(str(big), jobs=2))
    assert whole.count("\n") == 9000
    before = _children()
    monkeypatch.setenv(KILL_HOOK, "big.ibd")
    got: list[str] = []
    with pytest.raises(InputError, match=r"worker process \d+ killed by signal 9"):
        for block in json_lines(str(big), jobs=2):
            got.append(block)
    assert got == [whole[: len(got[0])]]  # the parent's first block, then the error
    assert _children() == before  # every child reaped


def test_pages_json_stopped_early_leaves_no_child(tmp_path: Path) -> None:
    before = _children()
    lines = json_lines(str(_big_file(tmp_path)), jobs=2)
    first = next(lines)
    assert first.startswith('{"page": 0, ')
    assert len(_children() - before) == 1  # the forked worker
    lines.close()  # as when stdout is closed under it
    assert _children() == before
