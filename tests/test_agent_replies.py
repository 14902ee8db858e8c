"""A lying or broken remote agent: one line naming the host, exit 2, nothing written astray.

The remote is the real agent run by :mod:`tests.fuzz.fake_ssh` (the ssh command of these runs),
its replies changed on the way back by the rules of each case: one case per class of reply a
compromised host could send, through ``copy HOST:PATH`` (pull), ``copy FILE HOST:DIR`` (push)
and ``report HOST:PATH``, each run as a script runs ibdtool (a subprocess under the fuzz
runner's time and memory limits: 2 s of CPU, 200 MB, RLIMIT_AS 1 GiB). Oracles: the exit code
and stderr, and the files on disk (what lies outside the destination, the copy's mode and owner)
as ``os.lstat`` sees them.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.remote import (
    HOST,
    NAME,
    Scene,
    live_ssh_children,
    run_in_cli,
    run_inprocess,
    with_rules,
)
from tests.fuzz.runner import Outcome


def _set(kind: str, nth: int, path: list[Any], value: Any) -> dict[str, Any]:
    return {"kind": kind, "nth": nth, "op": "set", "path": path, "value": value}


def _raw(kind: str, nth: int, payload: bytes) -> dict[str, Any]:
    return {"kind": kind, "nth": nth, "op": "payload", "hex": payload.hex()}


def _pack(kind: str, nth: int, at: int, fmt: str, value: int) -> dict[str, Any]:
    return {"kind": kind, "nth": nth, "op": "pack", "at": at, "fmt": fmt, "value": value}


def _one_byte_at(offset: int) -> str:
    """A well-formed ``D`` payload: one piece of 1 byte at ``offset``, sent raw."""
    return (struct.pack(">IBI", 1, 0, 1) + struct.pack(">QI", offset, 1) + b"x").hex()


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    s = Scene(tmp_path / "w")
    s.reset()
    return s


def _clean_error(entry: str, scene: Scene, rules: list[dict[str, Any]]) -> str:
    run = with_rules(rules, lambda: run_in_cli(entry, scene))
    assert run.outcome is Outcome.CLEAN_ERROR, run.describe()
    assert run.exit_code == 2
    return run.detail


# --- pull: the remote never chooses where or how the local file is written ----------------------

#: J 2 is the answer to ``send``: the remote file's name, size, mode, owner and times
HOSTILE_NAMES = ["../evil", "../../evil", ".", "..", "", "a\x00b", "a\x1bb", "sub/evil", "a\nb"]


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=repr)
def test_pull_refuses_a_name_chosen_by_the_remote(name: str, scene: Scene) -> None:
    detail = _clean_error("pull", scene, [_set("J", 2, ["name"], name)])
    assert detail.startswith(f"ibdtool: error: {HOST}: "), detail
    assert list(scene.out.iterdir()) == []


def test_pull_refuses_an_absolute_name(scene: Scene) -> None:
    target = scene.local / "abs"
    _clean_error("pull", scene, [_set("J", 2, ["name"], str(target))])
    assert not target.exists() and list(scene.out.iterdir()) == []


def test_pull_into_a_directory_takes_the_name_from_the_command_line(scene: Scene) -> None:
    """A reply naming another, harmless file: the copy still lands under the name given."""
    run = with_rules([_set("J", 2, ["name"], "other.ibd")], lambda: run_in_cli("pull", scene))
    assert run.outcome is Outcome.OK, run.describe()
    assert [p.name for p in scene.out.iterdir()] == [NAME]
    assert (scene.out / NAME).read_bytes() == scene.source.read_bytes()


@pytest.mark.parametrize("mode", [0o7777, 0o6755, 0o1777, 0o666])
def test_pull_masks_special_and_world_write_mode_bits(mode: int, scene: Scene) -> None:
    rules = [_set("J", 2, ["mode"], mode), _set("J", 2, ["uid"], 4242), _set("J", 2, ["gid"], 4242)]
    run = with_rules(rules, lambda: run_in_cli("pull", scene))
    assert run.outcome is Outcome.OK, run.describe()
    st = (scene.out / NAME).lstat()
    assert st.st_mode & 0o7777 == mode & 0o775
    assert (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid())


PULL_LIES = {
    "size negative": [_set("J", 2, ["size"], -1)],
    "size a string": [_set("J", 2, ["size"], "622592")],
    "size past any file": [_set("J", 2, ["size"], 2**63)],
    "mtime past any clock": [_set("J", 2, ["mtime_ns"], 10**40)],
    "mode a list": [_set("J", 2, ["mode"], [1])],
    "block size zero": [_set("J", 2, ["fs_block"], 0)],
    "identity missing": [{"kind": "J", "nth": 2, "op": "del", "path": ["identity"]}],
    "reply not UTF-8": [_raw("J", 2, b'{"ok": true, "name": "\xff"}')],
    "reply nested 100,000 deep": [{"kind": "J", "nth": 2, "op": "deep", "n": 100_000}],
    "reply a list": [_raw("J", 2, b"[]")],
    "reply declares 4 GiB": [{"kind": "J", "nth": 2, "op": "length", "value": 2**32 - 1}],
    "error not a string": [_raw("J", 2, b'{"ok": false, "error": {"x": [1]}}')],
    "range map a zlib bomb": [{"kind": "M", "nth": 1, "op": "bomb", "n": 1 << 30}],
    "range map not zlib": [_raw("M", 1, b"not a range map")],
    "ranges unsorted": [
        {"kind": "M", "nth": 1, "op": "ranges", "ranges": [[8192, 12288], [0, 4096]]}
    ],
    "ranges overlap": [
        {"kind": "M", "nth": 1, "op": "ranges", "ranges": [[0, 8192], [4096, 12288]]}
    ],
    "range past the end": [{"kind": "M", "nth": 1, "op": "ranges", "ranges": [[0, 2**63]]}],
    "a million bogus ranges": [
        {"kind": "M", "nth": 1, "op": "comb", "step": 2, "len": 1, "upto": 1 << 21}
    ],
    "data: more pieces than bytes": [_pack("D", 1, 0, ">I", 2**32 - 1)],
    "data: a piece outside the file": [_pack("D", 1, 9, ">Q", 2**40)],
    "data: a piece outside its window": [_pack("D", 1, 9, ">Q", 65536)],
    "data: a zlib bomb": [{"kind": "D", "nth": 1, "op": "body_bomb", "n": 1 << 30}],
    "data: a byte changed": [{"kind": "D", "nth": 1, "op": "flip", "at": 3000}],
    "data: cut short": [{"kind": "D", "nth": 1, "op": "cut", "at": 7}],
    "checkpoint too short": [{"kind": "K", "nth": 1, "op": "cut", "at": 3}],
    "checkpoint out of order": [_pack("K", 1, 0, ">I", 7)],
    "an unknown frame": [{"kind": "D", "nth": 1, "op": "insert", "as": "Z", "hex": "00"}],
}


@pytest.mark.parametrize("case", sorted(PULL_LIES))
def test_pull_from_a_lying_remote(case: str, scene: Scene) -> None:
    detail = _clean_error("pull", scene, PULL_LIES[case])
    assert detail.startswith(f"ibdtool: error: {HOST}: "), detail
    assert not (scene.out / NAME).exists()


# --- push: the receiving agent's answers ---------------------------------------------------------

PUSH_LIES = {
    "block size zero": [_set("J", 2, ["fs_block"], 0)],
    "block size a string": [_set("J", 2, ["fs_block"], "4096")],
    "destination missing": [{"kind": "J", "nth": 2, "op": "del", "path": ["dest"]}],
    "start negative": [_set("J", 3, ["start"], -1)],
    "start past the windows": [_set("J", 3, ["start"], 10**40)],
    "notes not a list": [_set("J", 3, ["notes"], 5)],
    "window allocated a string": [_set("J", 4, ["allocated"], "x")],
    "done without allocated": [{"kind": "J", "nth": 5, "op": "del", "path": ["allocated"]}],
    "answer not UTF-8": [_raw("J", 3, b"\xff\xfe")],
    "answer declares 4 GiB": [{"kind": "J", "nth": 3, "op": "length", "value": 2**32 - 1}],
}


@pytest.mark.parametrize("case", sorted(PUSH_LIES))
def test_push_to_a_lying_remote(case: str, scene: Scene) -> None:
    detail = _clean_error("push", scene, PUSH_LIES[case])
    assert detail.startswith(f"ibdtool: error: {HOST}: "), detail


# --- report host:path ---------------------------------------------------------------------------

#: J 2 answers ``walk`` (the root and the listing's first batch: the one file here), J 3
#: ``fetch`` (then M 1 its data map — the file has holes, so it is not ``dense`` —, its D
#: frames and E, an R frame a sibling file read: none here); with J 2 saying ``more``, J 3
#: answers the ``walk_more`` asked for at once (an empty last batch) and J 4 the fetch
MORE = _set("J", 2, ["more"], True)
REPORT_LIES = {
    "walk: files not a list": [_set("J", 2, ["files"], 5)],
    "walk: a file entry a number": [_set("J", 2, ["files", 0], 7)],
    "walk: a size negative": [_set("J", 2, ["files", 0, 1], -5)],
    "walk: root missing": [{"kind": "J", "nth": 2, "op": "del", "path": ["root"]}],
    "walk: unlisted of numbers": [_set("J", 2, ["unlisted"], [[1, 2, 3]])],
    "walk: nested 100,000 deep": [{"kind": "J", "nth": 2, "op": "deep", "n": 100_000, "obj": 1}],
    "walk: more a string": [_set("J", 2, ["more"], "yes")],
    "walk: a path with a surrogate no name has": [_set("J", 2, ["files", 0, 0], "/x/\ud800.ibd")],
    "walk: a path with a NUL": [_set("J", 2, ["files", 0, 0], "/x/a\u0000.ibd")],
    "walk: more entries than asked": [_set("J", 2, ["files"], [["/x/t.ibd", 0, 0, 0]] * 513)],
    "walk: a batch past its frame limit": [
        {"kind": "J", "nth": 2, "op": "length", "value": (1 << 20) + 1}
    ],
    "walk_more: files not a list": [MORE, _set("J", 3, ["files"], 5)],
    "walk_more: an entry of 5 items": [MORE, _set("J", 3, ["files"], [["/x/u.ibd", 0, 0, 0, 0]])],
    "walk_more: an empty batch said to go on": [MORE, _set("J", 3, ["more"], True)],
    "walk_more: a failure": [MORE, _raw("J", 3, b'{"ok": false, "error": "disk on fire"}')],
    "walk_more: error not a string": [MORE, _raw("J", 3, b'{"ok": false, "error": [1]}')],
    "fetch: size negative": [_set("J", 3, ["size"], -1)],
    "fetch: whole a string": [_set("J", 3, ["whole"], "yes")],
    "fetch: sent whole past the size asked": [_set("J", 3, ["size"], 2**40)],
    "fetch: fiemap too short": [_set("J", 3, ["fiemap"], [1])],
    "fetch: block size zero": [_set("J", 3, ["fs_block"], 0)],
    "fetch: siblings not a list": [_set("J", 3, ["siblings"], 5)],
    "fetch: one sibling": [_set("J", 3, ["siblings"], [None])],
    "fetch: a sibling larger than asked": [_set("J", 3, ["siblings"], [None, 5000])],
    "fetch: dense a string": [_set("J", 3, ["dense"], "yes")],
    "fetch: dense missing": [{"kind": "J", "nth": 3, "op": "del", "path": ["dense"]}],
    # the file has holes: its M follows where the reader told of no hole expects data
    "fetch: dense said of a file with holes": [_set("J", 3, ["dense"], True)],
    "fetch: range map a zlib bomb": [{"kind": "M", "nth": 1, "op": "bomb", "n": 1 << 30}],
    "fetch: ranges past the end": [
        {"kind": "M", "nth": 1, "op": "ranges", "ranges": [[0, 2**62]]}
    ],
    "fetch: more pieces than bytes": [_pack("D", 1, 0, ">I", 2**32 - 1)],
    "fetch: a piece outside the file": [_pack("D", 1, 9, ">Q", 2**40)],
    "fetch: a codec not agreed": [_pack("D", 1, 4, ">B", 7)],
    "fetch: a zlib bomb": [{"kind": "D", "nth": 1, "op": "body_bomb", "n": 1 << 30}],
    "fetch: frame declares 4 GiB": [{"kind": "D", "nth": 1, "op": "length", "value": 2**32 - 1}],
    "fetch: a piece before the last": [
        {"kind": "E", "nth": 1, "op": "insert", "as": "D", "hex": _one_byte_at(0)}
    ],
    # the table honest, the compressed bytes cut: found where the file is inflated (a worker)
    "fetch: data cut short": [{"kind": "D", "nth": 1, "op": "cut", "at": 2000}],
    "fetch: error not a string": [
        {"kind": "E", "nth": 1, "op": "insert", "as": "J", "hex": b"[1]".hex()}
    ],
    "fetch: a failure inside the data": [
        {"kind": "E", "nth": 1, "op": "insert", "as": "J",
         "hex": b'{"ok": false, "error": "disk on fire"}'.hex()}
    ],
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REPORT_LIES))
def test_report_of_a_lying_remote(case: str, scene: Scene) -> None:
    detail = _clean_error("report", scene, REPORT_LIES[case])
    assert f"{HOST}: " in detail, detail


#: the same, file by file a range at a time (``open``, ``read``: a file larger than a fetch, or
#: :func:`ibdtool.report.remote.scan_host` without ``fetch``): J 3 answers ``open`` (M 1 its
#: data map), then ``read``: D frames and E
RANGE_LIES = {
    "open: size negative": [_set("J", 3, ["size"], -1)],
    "open: handle a string": [_set("J", 3, ["handle"], "x")],
    "open: fiemap too short": [_set("J", 3, ["fiemap"], [1])],
    "open: block size zero": [_set("J", 3, ["fs_block"], 0)],
    "open: range map a zlib bomb": [{"kind": "M", "nth": 1, "op": "bomb", "n": 1 << 30}],
    "open: ranges past the end": [{"kind": "M", "nth": 1, "op": "ranges", "ranges": [[0, 2**62]]}],
    "read: more pieces than bytes": [_pack("D", 1, 0, ">I", 2**32 - 1)],
    "read: a zlib bomb": [{"kind": "D", "nth": 1, "op": "body_bomb", "n": 1 << 30}],
    "read: frame declares 4 GiB": [{"kind": "D", "nth": 1, "op": "length", "value": 2**32 - 1}],
    "read: error not a string": [
        {"kind": "E", "nth": 1, "op": "insert", "as": "J", "hex": b"[1]".hex()}
    ],
}


@pytest.mark.parametrize("case", sorted(RANGE_LIES))
def test_report_a_range_at_a_time_of_a_lying_remote(case: str, scene: Scene) -> None:
    run = with_rules(RANGE_LIES[case], lambda: run_inprocess("report", scene, fetch=False))
    assert run.outcome is Outcome.CLEAN_ERROR, run.describe()
    assert run.detail.startswith(f"{HOST}: "), run.detail


def test_honest_fake_remote_copies_and_reports(scene: Scene) -> None:
    """The harness itself: with no rules, every entry point succeeds."""
    for entry in ("pull", "push", "report"):
        run = with_rules([], lambda e=entry: run_in_cli(e, scene))  # type: ignore[misc]
        assert run.outcome is Outcome.OK, run.describe()
    assert (scene.out / NAME).read_bytes() == scene.source.read_bytes()
    assert (scene.pushed / NAME).read_bytes() == scene.local_source.read_bytes()
    assert json.dumps(sorted(p.name for p in scene.out.iterdir())) == json.dumps([NAME])


# --- a session the engine gives up on ends with the run ------------------------------------------

#: two of the rule sets that left a fake ssh waiting on our end of its stdin (fuzz seed 6000)
LEFT_RUNNING = {
    "pull, bad protocol in the hello": (
        "pull",
        [{"kind": "D", "nth": 3, "op": "body_bomb", "n": 1048576},
         _set("J", 0, ["protocol"], 2**63), {"kind": "E", "nth": 2, "op": "drop"}],
    ),
    "push, hello replaced": (
        "push",
        [_raw("J", 0, b'{"ok": true'), _raw("J", 6, b"[]"),
         {"kind": "J", "nth": 6, "op": "length", "value": 1}],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(LEFT_RUNNING))
def test_a_failed_session_leaves_no_ssh_running(case: str, scene: Scene) -> None:
    """In-process (the TUI, a long report) a session that failed while starting was never
    closed: its ssh waited on our end of its stdin as long as the process lived."""
    entry, rules = LEFT_RUNNING[case]
    before = set(live_ssh_children())
    run = with_rules(rules, lambda: run_inprocess(entry, scene))
    assert run.outcome is Outcome.CLEAN_ERROR, run.describe()
    assert set(live_ssh_children()) - before == set()


def test_a_fetch_holds_no_more_than_its_file_whatever_the_remote_sends(scene: Scene) -> None:
    """Data frames each well-formed (pieces in order, inside the file, raw) but holding 13
    bytes a byte of the file: the host's thread stops holding them once they pass the file's
    size and the tables its ranges need, before the 5 MB they add up to (tracemalloc); each
    frame's table is checked without a Python object a piece (1.9 MB for one frame here)."""
    import tracemalloc

    pieces, frames = 1 << 14, 24
    size = scene.source.stat().st_size
    assert frames * pieces < size and frames * pieces * 13 > 8 * size
    # the first data frame replaced by the spray (its pieces from byte 0 on)
    rules = [
        {"kind": "D", "nth": 1, "op": "spray", "first": 0, "frames": frames, "pieces": pieces},
        {"kind": "D", "nth": 1, "op": "drop"},
    ]

    def peak_of(rules: list[dict[str, Any]]) -> tuple[Any, int]:
        tracemalloc.start()
        try:
            run = with_rules(rules, lambda: run_inprocess("report", scene))
            return run, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    honest, _ = peak_of([])  # the modules imported, the caches filled
    assert honest.outcome is Outcome.OK, honest.describe()
    honest, honest_peak = peak_of([])
    run, peak = peak_of(rules)
    assert run.outcome is Outcome.CLEAN_ERROR, run.describe()
    assert run.detail.startswith(f"{HOST}: more than the "), run.detail
    assert peak < honest_peak + 2 * size, (peak, honest_peak)


@pytest.mark.parametrize("fetch", [True, False], ids=["fetched", "a range at a time"])
def test_a_remote_that_stops_answering_mid_file_is_dropped_in_one_line(
    fetch: bool, scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The end of a file's data never comes: after the idle limit the session is dropped and
    the host's row says so (the file being read closed on a dropped session: no bug row, as
    fuzz seed 24100 found a range at a time)."""
    monkeypatch.setenv("IBDTOOL_AGENT_IDLE", "1.5")
    rules = [{"kind": "E", "nth": 1, "op": "drop"}]
    run = with_rules(rules, lambda: run_inprocess("report", scene, fetch=fetch))
    assert run.outcome is Outcome.CLEAN_ERROR, run.describe()
    assert run.detail == f"{HOST}: no answer for 2 s; dropped", run.detail


def test_a_walk_batch_stays_under_its_frame_limit_whatever_the_names(tmp_path: Path) -> None:
    """The agent's listing of 1,200 files of 129-character names (escaped in JSON: a non-ASCII
    letter each 6 bytes), asked for in batches of 100,000: it cuts each batch once its JSON
    passes ``WALK_BYTES``, so every batch's frame stays under ``WALK_FRAME``, the limit the host
    reads it with; the batches together are every file, in name order (``os.listdir``)."""
    import io

    from ibdtool.copy import agent

    folder = tmp_path / "shop"
    folder.mkdir()
    for i in range(1200):
        (folder / f"{i:05d}{'é' * 120}.ibd").touch()  # 245 bytes: near NAME_MAX
    out = io.BytesIO()
    agent._serve_walk({"path": str(tmp_path), "patterns": [r".*\.ibd$"], "batch": 100_000}, out)
    while agent._WALK:
        agent._serve_walk_more({"batch": 100_000}, out)
    out.seek(0)
    listed, sizes = [], []
    while out.tell() < len(out.getvalue()):
        _, payload = agent.read_frame(out, (b"J",), agent.WALK_FRAME)
        sizes.append(len(payload))
        listed += [entry[0] for entry in json.loads(payload)["files"]]
    assert len(sizes) > 3 and max(sizes) < agent.WALK_FRAME
    assert max(sizes) < agent.WALK_BYTES + 4 * 1024, sizes
    assert listed == [str(folder / name) for name in sorted(os.listdir(folder))]


#: a reply of each shape that fits it (what the agent writes)
FITTING: dict[str, dict[str, Any]] = {
    "hello": {"ok": True, "protocol": 4, "codecs": ["zstd", "zlib", "none"], "python": "3.11"},
    "source": {
        "ok": True, "name": "t.ibd", "size": 65536, "mode": 0o640, "uid": 27, "gid": 27,
        "atime_ns": 1, "mtime_ns": 2, "allocated": 65536, "fs_block": 4096,
        "identity": {"size": 65536, "mtime_ns": 2, "ino": 12, "dev": 2049},
    },
    "sums": {"ok": True, "crcs": [1, 2, 3]},
    "receiving": {"ok": True, "dest": "/x/t.ibd", "fs_block": 4096, "free": 1 << 30},
    "asks_sums": {"ok": True, "sums": 3},
    "started": {"ok": True, "start": 0, "notes": ["a note"]},
    "window": {"ok": True, "window": 2, "allocated": 8192},
    "done": {
        "ok": True, "done": True, "dest": "/x/t.ibd", "allocated": 8192, "notes": [],
        "bytes_written": 8192,
    },
    "walk": {
        "ok": True, "root": "/x", "dir": True, "datadir": False, "more": True,
        "files": [["/x/a/t.ibd", 65536, 65536, 32768], ["/x/a/f", 0, None, None]],
        "unlisted": [["/x/b", "permission denied"]],
    },
    "walk_more": {"ok": True, "files": [], "unlisted": [], "more": False},
    "open": {
        "ok": True, "handle": 1, "size": 65536, "allocated": 65536, "fs_block": 4096,
        "fiemap": [1, 0, 1, 0],
    },
    "size": {"ok": True, "size": 65536},
    "slurp": {"ok": True},
    "fetch": {"ok": True, "whole": True, "size": 65536},
    "fetched": {
        "ok": True, "whole": True, "size": 65536, "dense": False, "allocated": 65536,
        "fs_block": 4096, "fiemap": None, "siblings": [None, 120],
    },
}  # fmt: skip


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key and index path inside ``doc``."""
    keys = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    out = []
    for k, v in keys:
        out.append((*at, k))
        out += _paths(v, (*at, k))
    return out


def _named(name: str, msg: Any) -> str | None:
    """The reference: the shape's named pass (what every reply went through before the first
    pass without names), its message or None."""
    from ibdtool.copy import agent, replies

    try:
        agent.expect_ok(msg)
        replies.SHAPES[name](msg, "")
    except agent.AgentError as exc:
        return str(exc)
    return None


def test_a_reply_is_refused_as_the_named_pass_refuses_it() -> None:
    """Every value of the fuzzer's hostile list at every place of a fitting reply of every
    shape (and every key removed): :func:`check_reply` accepts what the named pass accepts and
    refuses the rest with its very message, though a fitting reply makes no name."""
    import copy

    from ibdtool.copy import agent, replies
    from tests.fuzz.remote import _HOSTILE_VALUES

    assert FITTING.keys() == replies.SHAPES.keys()
    tried = refused = 0
    for name, fitting in FITTING.items():
        assert replies.check_reply(name, copy.deepcopy(fitting)) == fitting
        for path in _paths(fitting):
            for value in (*_HOSTILE_VALUES, KeyError):
                msg = copy.deepcopy(fitting)
                where = msg
                for k in path[:-1]:
                    where = where[k]
                if value is KeyError:
                    if not isinstance(where, dict):
                        continue
                    del where[path[-1]]
                else:
                    where[path[-1]] = value
                expected = _named(name, msg)
                try:
                    replies.check_reply(name, msg)
                    got = None
                except agent.AgentError as exc:
                    got = str(exc)
                assert got == expected, (name, path, value)
                tried += 1
                refused += got is not None
    assert tried > 3000 and refused > tried // 2, (tried, refused)
