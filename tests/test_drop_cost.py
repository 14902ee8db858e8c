"""Extents and the predicted DROP/unlink time (issue 22 items 1 and 2), against real files.

Expected values come from outside ibdtool: ``findmnt`` and ``lsblk`` (util-linux) for the mount
and the device's discard support, ``filefrag -v`` for the extent count, and a clock around a
real ``unlink`` (``time.monotonic``) or a real ``DROP TABLE`` for the time the prediction is
about. The prediction is checked to hold, not to be fast: the range is what ibdtool promises.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from ibdtool.fs import calibrate, extents, rates
from ibdtool.fs.mounts import discard_max_bytes, mount_of, read_mounts
from tests.cli_runner import cli_env, run_ibdtool
from tests.test_allocation import punch_hole

PAGE = 16384


def filefrag_extents(path: Path) -> int:
    """FIEMAP records as ``filefrag -v`` lists them, one row each (not its summary line)."""
    out = subprocess.run(["filefrag", "-v", str(path)], capture_output=True, text=True, check=True)
    return sum(1 for line in out.stdout.splitlines() if re.match(r"\s*\d+:\s+\d+\.\.", line))


def punched_file(path: Path, pages: int, keep: int = 8192) -> None:
    """``pages`` 16 KiB pages of data, each punched after its first ``keep`` bytes, as page
    compression leaves a tablespace; flushed, so the extents are on disk."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        chunk = os.urandom(PAGE) * 64
        for _ in range(0, pages, 64):
            os.write(fd, chunk)
        os.ftruncate(fd, pages * PAGE)
        os.fsync(fd)
        for i in range(pages):
            punch_hole(fd, i * PAGE + keep, PAGE - keep)
        os.fsync(fd)
    finally:
        os.close(fd)


def state_env(tmp_path: Path) -> dict[str, str]:
    return cli_env(XDG_STATE_HOME=str(tmp_path / "state"), COLUMNS="200")


def test_mount_is_findmnts(tmp_path: Path) -> None:
    m = mount_of(tmp_path)
    assert m is not None
    out = subprocess.run(
        [
            "findmnt",
            "-n",
            "-o",
            "TARGET,FSTYPE,MAJ:MIN,FS-OPTIONS,VFS-OPTIONS",
            "-T",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    target, fstype, majmin, fs_opts, vfs_opts = out
    assert (m.mount_point, m.fstype, m.device) == (target, fstype, majmin)
    assert m.options == set(fs_opts.split(",")) | set(vfs_opts.split(","))
    assert m.discard == ("discard" in fs_opts.split(","))


def _findmnt_target(path: Path) -> str:
    """The mount point of ``path`` (one of them listed twice when mounted over itself)."""
    return subprocess.run(
        ["findmnt", "-n", "-o", "TARGET", "-T", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[-1]


def test_filesystem_of_is_findmnts_for_links_and_repeats(tmp_path: Path) -> None:
    """:func:`extents.filesystem_of` caches by device and folder: files, a link to a file on
    another mount and a linked folder, each asked twice (the second from the cache), name the
    mount ``findmnt`` gives for the resolved path."""
    other_root = Path("/dev/shm")
    if not other_root.is_dir() or _findmnt_target(other_root) == _findmnt_target(tmp_path):
        pytest.skip("no second mount (/dev/shm) to link to")
    other = Path(
        subprocess.run(
            ["mktemp", "-d", "-p", str(other_root)], capture_output=True, text=True
        ).stdout.strip()
    )
    try:
        (other / "far.ibd").write_bytes(b"x")
        (tmp_path / "db").mkdir()
        (tmp_path / "db" / "near.ibd").write_bytes(b"x")
        (tmp_path / "db" / "link.ibd").symlink_to(other / "far.ibd")
        (tmp_path / "linked").symlink_to(other)
        paths = [
            tmp_path / "db" / "near.ibd",
            tmp_path / "db" / "link.ibd",
            tmp_path / "linked" / "far.ibd",
            other / "far.ibd",
        ]
        for _ in range(2):
            for p in paths:
                where = extents.filesystem_of(p)
                assert where.mount is not None
                assert where.mount.mount_point == _findmnt_target(p.resolve()), p
        assert extents.filesystem_of(paths[1]).mount != extents.filesystem_of(paths[0]).mount
    finally:
        for f in other.iterdir():
            f.unlink()
        other.rmdir()


def test_device_discard_is_lsblks(tmp_path: Path) -> None:
    m = mount_of(tmp_path)
    assert m is not None
    rows = subprocess.run(
        ["lsblk", "-b", "-n", "-r", "-o", "MAJ:MIN,DISC-MAX"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    by_dev = dict(line.split() for line in rows if len(line.split()) == 2)
    assert discard_max_bytes(m.device) == int(by_dev[m.device])


def test_mountinfo_unescapes_paths(tmp_path: Path) -> None:
    """A mount point with a space in it, as the kernel writes it (``\\040``)."""
    line = read_mounts()[0]
    text = (
        f"99 1 {line.device} / /mnt/with\\040space rw,relatime shared:1 - ext4 /dev/x rw,discard\n"
    )
    (m,) = __import__("ibdtool.fs.mounts", fromlist=["x"]).parse_mountinfo(text)
    assert m.mount_point == "/mnt/with space" and m.discard and "relatime" in m.options


def test_calibrated_prediction_holds_for_a_real_unlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """calibrate, then a file punched page by page: its timed unlink lies in the range, in
    one of three files. The calibration and the unlink are timed at different moments on a
    shared machine: a burst of writes beside one of them (the journal's commit) can push one
    unlink past four times the slowest calibrated run; a wrong rate (per extent, units, the
    state file's run) misses with every file."""
    work = tmp_path / "work"
    work.mkdir()
    done = run_ibdtool(
        "calibrate", work, "--extents", "1024", "-r", "3", "--json", env=state_env(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    cal = json.loads(done.stdout)
    assert Path(cal["state_file"]).is_file() and len(cal["per_extent_s"]) == 3
    assert not [p for p in work.iterdir()], "the scratch files are removed"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    seen = []
    for attempt in range(3):
        path = work / f"t{attempt}.ibd"
        punched_file(path, 2048)
        n = filefrag_extents(path)
        assert n >= 2000
        cost = extents.drop_cost(path, n, path.stat().st_size)
        assert cost is not None and cost.source == "calibration"
        assert cost.low is not None and cost.high is not None
        t0 = time.monotonic()
        os.unlink(path)
        took = time.monotonic() - t0
        seen.append((took, cost))
        if cost.low <= took <= cost.high:
            break
    assert cost.low <= took <= cost.high, seen


def test_state_file_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    m = mount_of(tmp_path)
    assert m is not None
    cal = calibrate.Calibration(
        m.device, m.fstype, m.mount_point, m.discard, str(tmp_path), "2026-01-01 00:00 UTC",
        1000, (1e-4, 2e-4, 3e-4), (0.01, 0.02, 0.03),
    )  # fmt: skip
    path = calibrate.save_calibration(cal)
    assert path == tmp_path / "state" / "ibdtool" / "calibration.json"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    assert calibrate.load_calibrations() == [cal]
    cost = extents.drop_cost(tmp_path, 10_000, 1 << 30)
    assert cost is not None and cost.source == "calibration"
    # the median run; from the fastest run times LOW to the slowest times HIGH
    lo, hi = calibrate.LOW, calibrate.HIGH
    quiet = rates.RATES.get((m.fstype, m.discard))
    assert cost.seconds == pytest.approx(0.02 + 2e-4 * 10_000)
    floor = min(lo * 1e-4, quiet.per_extent_low) if quiet else lo * 1e-4
    assert cost.low == pytest.approx(floor * 10_000)
    # the fixed part's high end is at least the built-in one (the server's own part of a DROP)
    base_high = max(hi * 0.03, quiet.base_high) if quiet else hi * 0.03
    assert cost.high == pytest.approx(base_high + hi * 3e-4 * 10_000)


GOOD_ENTRY = {
    "device": "1:2",
    "fstype": "ext4",
    "mount_point": "/",
    "discard": True,
    "directory": "/",
    "measured_at": "x",
    "extents": 5,
    "per_extent_s": [1e-4],
    "base_s": [0.1],
}
HOSTILE = [
    b"",
    b"\xff\xfe not json",
    b"[]",
    b'{"ibdtool_calibration": 2, "entries": []}',
    b'{"ibdtool_calibration": 1, "entries": {}}',
    b'{"ibdtool_calibration": 1, "entries": [1]}',
    b'{"ibdtool_calibration": 1, "entries": [{"device": "x"}]}',
    json.dumps(
        {"ibdtool_calibration": 1, "entries": [{**GOOD_ENTRY, "per_extent_s": [1e308]}]}
    ).encode(),
    json.dumps({"ibdtool_calibration": 1, "entries": [{**GOOD_ENTRY, "discard": "yes"}]}).encode(),
    json.dumps({"ibdtool_calibration": 1, "entries": [{**GOOD_ENTRY, "base_s": [1, 2]}]}).encode(),
    b'{"ibdtool_calibration": 1, "entries": [' + b"{}," * 100 + b"{}]}",
    b" " * (300 * 1024),
]


@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_state_file_is_one_line(tmp_path: Path, data: bytes) -> None:
    state = tmp_path / "state" / "ibdtool"
    state.mkdir(parents=True)
    (state / "calibration.json").write_bytes(data)
    sample = Path(__file__).parent.parent / "samples" / "mariadb" / "p16k-pc_zlib.ibd"
    done = run_ibdtool("inspect", "--json", sample, env=state_env(tmp_path))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "calibration file" in done.stderr or "calibration.json" in done.stderr


def test_state_file_symlink_refused(tmp_path: Path) -> None:
    state = tmp_path / "state" / "ibdtool"
    state.mkdir(parents=True)
    (tmp_path / "elsewhere.json").write_text('{"ibdtool_calibration": 1, "entries": []}')
    (state / "calibration.json").symlink_to(tmp_path / "elsewhere.json")
    sample = Path(__file__).parent.parent / "samples" / "mariadb" / "p16k-pc_zlib.ibd"
    done = run_ibdtool("inspect", sample, env=state_env(tmp_path))
    assert done.returncode == 2 and "symbolic link" in done.stderr


def test_report_drop_column_totals_and_fail_on(tmp_path: Path) -> None:
    """Per-schema DROP DATABASE = the sum of its files' DROP TABLE; --fail-on slow_drop."""
    samples = Path(__file__).parent.parent / "samples" / "mariadb"
    for schema, names in {"a": ["p16k-pc_zlib", "p16k-pc_lz4"], "b": ["p16k-plain"]}.items():
        (tmp_path / "dd" / schema).mkdir(parents=True)
        for name in names:
            subprocess.run(
                ["cp", "--sparse=always", samples / f"{name}.ibd", tmp_path / "dd" / schema],
                check=True,
            )
    done = run_ibdtool("report", "--format", "json", tmp_path / "dd", env=state_env(tmp_path))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    rows = doc["tablespaces"]
    for row in rows:
        assert row["extents"] == filefrag_extents(Path(row["path"]))
        assert row["drop_low"] <= row["drop_seconds"] <= row["drop_high"]
        assert "built-in" in row["drop_basis"]
    for total in doc["totals"]["by_schema"]:
        mine = [r for r in rows if r["schema"] == total["schema"]]
        for key in ("drop_seconds", "drop_low", "drop_high"):
            assert total[key] == pytest.approx(sum(r[key] for r in mine), abs=2e-3)
    failing = run_ibdtool(
        "report", "--slow-drop", "0", "--fail-on", "slow_drop", tmp_path / "dd",
        env=state_env(tmp_path),
    )  # fmt: skip
    assert failing.returncode == 1 and "slow_drop" in failing.stderr
    assert "DROP DATABASE" in failing.stdout


def test_inspect_shows_drop_cost(tmp_path: Path) -> None:
    sample = Path(__file__).parent.parent / "samples" / "mariadb" / "p16k-pc_zlib.ibd"
    copy = tmp_path / "t.ibd"
    subprocess.run(["cp", "--sparse=always", sample, copy], check=True)
    doc = json.loads(run_ibdtool("inspect", "--json", copy, env=state_env(tmp_path)).stdout)
    cost = doc["drop_cost"]
    assert cost["extents"] == filefrag_extents(copy) == doc["extents"]
    assert cost["extents_per_gib"] == pytest.approx(
        cost["extents"] * (1 << 30) / doc["logical_size"], rel=1e-3
    )
    text = run_ibdtool("inspect", copy, env=state_env(tmp_path)).stdout
    assert "DROP cost" in text and "extents" in text
