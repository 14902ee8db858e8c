"""``ibdtool copy`` into a directory someone else can write, and ``--resume`` of a tampered part.

ibdtool runs as root on data directories the ``mysql`` user owns: that user can plant a symbolic
or hard link under the names a copy writes (``.NAME.ibdtool-part``, its ``.json`` state and the
state's ``.tmp``), or change bytes of a part kept for ``--resume``. Oracles: the victims' bytes
and modes as written here, and sha256 of source and copy.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from ibdtool.copy import agent
from ibdtool.errors import InputError
from ibdtool.server.journal import Journal
from tests.cli_runner import cli_env, run_ibdtool
from tests.processes import children
from tests.test_copy_local import ibdtool
from tests.test_copy_remote import (
    HOST,
    IBDTOOL,
    ThrowawaySshd,
    _agent_running,
    _comm,
    _make_sparse_file,
    _wait_for,
    run,
    seek_data_ranges,
    sha,
    spawn,
    sshd,  # noqa: F401  (the fixture)
)

SECRET = b"root:$6$not-for-the-mysql-user:19000:0:99999:7:::\n"


def _victim(path: Path) -> Path:
    path.write_bytes(SECRET)
    os.chmod(path, 0o600)
    return path


def _untouched(path: Path) -> bool:
    st = os.lstat(path)
    return path.read_bytes() == SECRET and stat.S_IMODE(st.st_mode) == 0o600


def _plant(out: Path, name: str, victims: Path) -> list[Path]:
    """Symbolic links from every name a copy of ``name`` writes in ``out`` to victim files."""
    planted = []
    for i, suffix in enumerate((".ibdtool-part", ".ibdtool-part.json", ".ibdtool-part.json.tmp")):
        victim = _victim(victims / f"victim{i}")
        (out / f".{name}{suffix}").symlink_to(victim)
        planted.append(victim)
    return planted


@pytest.mark.parametrize("resume", [False, True])
def test_links_planted_in_the_destination_are_not_followed(resume: bool, tmp_path: Path) -> None:
    src = tmp_path / "f.bin"
    _make_sparse_file(src, 8, seed=3)
    out, victims = tmp_path / "out", tmp_path / "victims"
    out.mkdir()
    victims.mkdir()
    planted = _plant(out, "f.bin", victims)
    res = ibdtool("copy", *(["--resume"] if resume else []), str(src), str(out))
    assert res.returncode == 0, res.stderr
    assert all(_untouched(v) for v in planted)
    assert sha(out / "f.bin") == sha(src)
    assert sorted(p.name for p in out.iterdir()) == ["f.bin"]


def test_forced_copy_replaces_a_planted_link_not_its_target(tmp_path: Path) -> None:
    src = tmp_path / "f.bin"
    _make_sparse_file(src, 4, seed=4)
    out = tmp_path / "out"
    out.mkdir()
    victim = _victim(tmp_path / "victim")
    (out / "f.bin").symlink_to(victim)
    res = ibdtool("copy", "--force", str(src), str(out))
    assert res.returncode == 0, res.stderr
    assert _untouched(victim)
    assert not (out / "f.bin").is_symlink() and sha(out / "f.bin") == sha(src)


def test_a_part_another_copy_holds_is_not_replaced(tmp_path: Path) -> None:
    src = tmp_path / "f.bin"
    _make_sparse_file(src, 4, seed=6)
    out = tmp_path / "out"
    out.mkdir()
    part = _victim(out / ".f.bin.ibdtool-part")
    with open(part, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        res = ibdtool("copy", str(src), str(out))
    assert res.returncode == 2
    assert res.stderr == f"ibdtool: error: {part}: another ibdtool copy is writing it\n"
    assert _untouched(part) and not (out / "f.bin").exists()


def test_in_place_refuses_a_symbolic_link(tmp_path: Path) -> None:
    victim = _victim(tmp_path / "victim")
    link = tmp_path / "t.ibd"
    link.symlink_to(victim)
    res = ibdtool("copy", "--in-place", "--yes", str(link))
    assert res.returncode == 2
    assert res.stderr.startswith(f"ibdtool: error: {link}: a symbolic link")
    assert res.stderr.count("\n") == 1 and _untouched(victim)


def test_journal_is_not_written_through_a_planted_link(tmp_path: Path) -> None:
    victim = _victim(tmp_path / "victim")
    link = tmp_path / "batch.jsonl"
    link.symlink_to(victim)
    with pytest.raises(InputError, match="symbolic link"):
        Journal(link).write("batch_start", target="page:zlib")
    hard = tmp_path / "hard.jsonl"
    os.link(victim, hard)
    with pytest.raises(InputError, match="hard links"):
        Journal(hard).write("batch_start", target="page:zlib")
    assert _untouched(victim)
    fresh = tmp_path / "new.jsonl"
    Journal(fresh).write("batch_start", target="page:zlib")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert json.loads(fresh.read_text())["event"] == "batch_start"


# --- an interrupted copy, then --resume ----------------------------------------------------------


def _windows_recorded(state: Path) -> int:
    try:
        return len(json.loads(state.read_bytes())["windows"])
    except (OSError, ValueError, KeyError):
        return 0


def _interrupted_local_copy(src: Path, out: Path) -> Path:
    """Start a slow copy of ``src`` into ``out``, stop it with SIGINT after three verified
    windows; returns the part file kept for --resume."""
    state = out / f".{src.name}.ibdtool-part.json"
    proc = spawn(["copy", "--bwlimit", "6M", str(src), str(out)])
    try:
        _wait_for(lambda: _windows_recorded(state) >= 3)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    return out / f".{src.name}.ibdtool-part"


def _flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        old = f.read(1)
        f.seek(offset)
        f.write(bytes([old[0] ^ 0xFF]))


def _data_offset(path: Path, nth: int) -> int:
    """The file offset of the ``nth`` byte of data (holes not counted)."""
    for start, end in seek_data_ranges(path):
        if nth < end - start:
            return start + nth
        nth -= end - start
    raise AssertionError("not that much data")


def test_resume_recopies_an_earlier_window_that_changed(tmp_path: Path) -> None:
    src = tmp_path / "big.bin"
    _make_sparse_file(src, 48, seed=11)
    out = tmp_path / "out"
    out.mkdir()
    part = _interrupted_local_copy(src, out)
    _flip_byte(part, _data_offset(src, 100))  # in the first window, long verified
    res = ibdtool("copy", "--resume", "--json", str(src), str(out))
    assert res.returncode == 0, res.stderr
    assert sha(out / "big.bin") == sha(src)
    doc = json.loads(res.stdout)
    assert doc["resumed_bytes"] == 0 and doc["bytes_read"] == doc["plan_bytes"]
    assert any("does not read back" in n for n in doc["notes"]), doc["notes"]


def test_resume_keeps_the_windows_before_a_changed_one(tmp_path: Path) -> None:
    src = tmp_path / "big.bin"
    _make_sparse_file(src, 48, seed=12)
    out = tmp_path / "out"
    out.mkdir()
    part = _interrupted_local_copy(src, out)
    state = json.loads((out / ".big.bin.ibdtool-part.json").read_bytes())
    window = state["window"]
    _flip_byte(part, _data_offset(src, window + 100))  # inside the second window
    res = ibdtool("copy", "--resume", "--json", str(src), str(out))
    assert res.returncode == 0, res.stderr
    assert sha(out / "big.bin") == sha(src)
    doc = json.loads(res.stdout)
    assert doc["resumed_bytes"] == window
    assert any("window 2 of the interrupted copy" in n for n in doc["notes"]), doc["notes"]


def test_resume_does_not_reopen_a_part_replaced_by_a_hard_link(tmp_path: Path) -> None:
    src = tmp_path / "big.bin"
    _make_sparse_file(src, 48, seed=13)
    out = tmp_path / "out"
    out.mkdir()
    part = _interrupted_local_copy(src, out)
    victim = _victim(tmp_path / "victim")
    part.unlink()
    os.link(victim, part)
    res = ibdtool("copy", "--resume", str(src), str(out))
    assert res.returncode == 0, res.stderr
    assert "linked to another name" in res.stdout + res.stderr
    assert _untouched(victim) and os.stat(victim).st_nlink == 1
    assert sha(out / "big.bin") == sha(src)


# --- the same over ssh: the far side runs the agent --------------------------------------------


def test_remote_push_does_not_follow_planted_links(
    sshd: ThrowawaySshd,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
) -> None:
    src = tmp_path / "f.bin"
    _make_sparse_file(src, 8, seed=5)
    remote, victims = tmp_path / "remote", tmp_path / "victims"
    remote.mkdir()
    victims.mkdir()
    planted = _plant(remote, "f.bin", victims)
    res = run(["copy", "--resume", str(src), f"{HOST}:{remote}/"], sshd)
    assert res.returncode == 0, res.stderr
    assert all(_untouched(v) for v in planted)
    assert sha(remote / "f.bin") == sha(src)
    assert sorted(p.name for p in remote.iterdir()) == ["f.bin"]


def test_remote_resume_recopies_an_earlier_window_that_changed(
    sshd: ThrowawaySshd,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
) -> None:
    src = tmp_path / "big.bin"
    _make_sparse_file(src, 48, seed=7)
    remote = tmp_path / "remote"
    remote.mkdir()
    state = remote / ".big.bin.ibdtool-part.json"
    proc = spawn(
        ["copy", "--bwlimit", "4M", str(src), f"{HOST}:{remote}/"], IBDTOOL_SSH=sshd.ssh_command
    )
    try:
        _wait_for(lambda: _windows_recorded(state) >= 3)
        ssh = [p for p in children(proc.pid) if _comm(p) == "ssh"]
        assert len(ssh) == 1, ssh
        os.kill(ssh[0], signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _wait_for(lambda: not _agent_running(remote))
    _flip_byte(remote / ".big.bin.ibdtool-part", _data_offset(src, 100))
    res = run(["copy", "--resume", "--json", str(src), f"{HOST}:{remote}/"], sshd)
    assert res.returncode == 0, res.stderr
    assert sha(remote / "big.bin") == sha(src)
    assert json.loads(res.stdout)["resumed_bytes"] == 0


# --- the destination changed behind the copy's back, between writing and verifying ----------------


def _sparse_source(path: Path) -> list[tuple[int, int]]:
    """A 1 MiB file with a 4 KiB block of random data every 64 KiB, holes between; its pieces."""
    pieces = [(at, at + 4096) for at in range(0, 1 << 20, 64 << 10)]
    with open(path, "wb") as f:
        f.truncate(1 << 20)
        for start, end in pieces:
            f.seek(start)
            f.write(os.urandom(end - start))
    assert seek_data_ranges(path) == pieces
    return pieces


def _written(
    tmp_path: Path,
) -> tuple[agent.Source, agent.Destination, list[tuple[int, int]], int]:
    """A Destination with every piece of :func:`_sparse_source` written, not yet checkpointed."""
    pieces = _sparse_source(tmp_path / "src.bin")
    source = agent.Source(str(tmp_path / "src.bin"))
    dest = agent.Destination(str(tmp_path / "out" / "copy.bin"), source.meta())
    assert dest.prepare(pieces, 1 << 20) == 0 and len(dest.windows) == 1
    crc = 0
    for start, end in dest.windows[0]:
        crc = dest.copy_from(source.fd, start, end, crc)
    return source, dest, pieces, crc


def test_verify_fails_on_a_byte_changed_behind_the_copys_back(tmp_path: Path) -> None:
    """A byte of the part changed by another process after it was written and before the
    window's read-back: the check reads the destination itself, so it fails, and nothing
    is left under the final name."""
    (tmp_path / "out").mkdir()
    source, dest, pieces, crc = _written(tmp_path)
    try:
        fd = os.open(dest.part, os.O_WRONLY)
        try:
            at = pieces[5][0] + 100
            old = (tmp_path / "src.bin").read_bytes()[at]
            os.pwrite(fd, bytes([old ^ 0x40]), at)
        finally:
            os.close(fd)
        dest.checkpoint(0, crc)
        with pytest.raises(agent.VerifyError, match="differ from the source"):
            dest.wait_checkpoints()
    finally:
        dest.abandon(keep=False)
        source.close()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == []


def test_blocks_allocated_in_a_hole_behind_the_copys_back_are_punched(tmp_path: Path) -> None:
    """Holes are punched only where the filesystem holds blocks (FIEMAP): zeros written into
    a hole of the part by someone else (or a filesystem's preallocation) are found and
    freed, so the copy has exactly the source's data map."""
    (tmp_path / "out").mkdir()
    source, dest, pieces, crc = _written(tmp_path)
    try:
        fd = os.open(dest.part, os.O_WRONLY)
        try:
            os.pwrite(fd, bytes(3 * 4096), pieces[2][1] + 4096)  # three zero blocks, a hole
            os.fsync(fd)
        finally:
            os.close(fd)
        assert len(seek_data_ranges(Path(dest.part))) > len(pieces)
        dest.checkpoint(0, crc)
        dest.finish()
    finally:
        source.close()
    copy = tmp_path / "out" / "copy.bin"
    assert copy.read_bytes() == (tmp_path / "src.bin").read_bytes()
    assert seek_data_ranges(copy) == pieces


# --- --resume after the source was rewritten in place, its size, mtime and inode kept -----------


def _rewrite_in_place(path: Path, offset: int) -> None:
    """Change one byte of ``path`` where it is, then give it back its times: the size, mtime
    and inode a state file records are all as they were."""
    st = path.stat()
    _flip_byte(path, offset)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    now = path.stat()
    assert (now.st_size, now.st_mtime_ns, now.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


@pytest.mark.parametrize("window", [1, 2])
def test_resume_recopies_windows_of_a_source_rewritten_in_place(
    window: int, tmp_path: Path
) -> None:
    src = tmp_path / "big.bin"
    _make_sparse_file(src, 48, seed=14)
    out = tmp_path / "out"
    out.mkdir()
    _interrupted_local_copy(src, out)
    size = json.loads((out / ".big.bin.ibdtool-part.json").read_bytes())["window"]
    _rewrite_in_place(src, _data_offset(src, (window - 1) * size + 100))
    res = ibdtool("copy", "--resume", "--json", str(src), str(out))
    assert res.returncode == 0, res.stderr
    assert sha(out / "big.bin") == sha(src)
    doc = json.loads(res.stdout)
    assert doc["resumed_bytes"] == (window - 1) * size
    assert any(f"window {window} of the source differs" in n for n in doc["notes"]), doc["notes"]


def _fake_remote(
    args: list[str], rules: list[dict[str, object]]
) -> subprocess.CompletedProcess[str]:
    """ibdtool with the fake ssh of the fuzz harness (the real agent, here), under ``rules``."""
    from tests.fuzz.remote import RULES_ENV, ssh_command

    env = cli_env(**{RULES_ENV: json.dumps(rules)})
    return run_ibdtool("copy", "-e", ssh_command(), *args, command=IBDTOOL, env=env, timeout=300)


def test_pull_resume_recopies_a_remote_source_rewritten_in_place(tmp_path: Path) -> None:
    remote, out = tmp_path / "remote", tmp_path / "out"
    remote.mkdir()
    out.mkdir()
    src = remote / "big.bin"
    _make_sparse_file(src, 48, seed=15)
    # the remote stops after its third window: the local end keeps what it verified
    res = _fake_remote([f"fake:{src}", f"{out}/"], [{"kind": "K", "nth": 3, "op": "end"}])
    assert res.returncode == 2 and "--resume" in res.stderr, res.stderr
    assert _windows_recorded(out / ".big.bin.ibdtool-part.json") >= 1
    _rewrite_in_place(src, _data_offset(src, 100))
    res = _fake_remote(["--resume", "--json", f"fake:{src}", f"{out}/"], [])
    assert res.returncode == 0, res.stderr
    assert sha(out / "big.bin") == sha(src)
    doc = json.loads(res.stdout)
    assert doc["resumed_bytes"] == 0
    assert any("window 1 of the source differs" in n for n in doc["notes"]), doc["notes"]


def test_push_resume_recopies_a_local_source_rewritten_in_place(tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    src = tmp_path / "big.bin"
    _make_sparse_file(src, 48, seed=16)
    # the receiving agent dies after its answer for the second window
    res = _fake_remote([str(src), f"fake:{remote}/"], [{"kind": "J", "nth": 5, "op": "end"}])
    assert res.returncode == 2, res.stderr
    assert _windows_recorded(remote / ".big.bin.ibdtool-part.json") >= 1
    _rewrite_in_place(src, _data_offset(src, 100))
    res = _fake_remote(["--resume", "--json", str(src), f"fake:{remote}/"], [])
    assert res.returncode == 0, res.stderr
    assert sha(remote / "big.bin") == sha(src)
    doc = json.loads(res.stdout)
    assert doc["resumed_bytes"] == 0
    assert any("window 1 of the source differs" in n for n in doc["notes"]), doc["notes"]
