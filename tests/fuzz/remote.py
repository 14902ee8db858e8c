"""The agent's replies as fuzz input: a real agent behind a fake ssh, its frames mutated.

Three entry points cross the wire: ``copy HOST:PATH DIR`` (pull), ``copy FILE HOST:DIR/``
(push) and ``report HOST:PATH``. Each is run against :mod:`tests.fuzz.fake_ssh` as the ssh
command: the real agent runs on this machine and every frame it writes passes through a few
*rules* (:func:`random_rules` draws them, structure-aware: control messages get hostile field
values, plans get unsorted, overlapping, out-of-file or bombed range maps, data frames lying
piece tables and bombs, checkpoints wrong indices, and any frame a lying length or an early
end). The outcome is classified as :mod:`.runner` does (ok / clean error / traceback / hang /
over-limit), and two oracles hold whatever the remote says: a pull writes nothing outside the
destination directory but the file named on the command line (or the part kept for
``--resume``), with no setuid, setgid, sticky or world-write bit; a clean error is one line
that names the host.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fuzz.mutators import Chooser
from tests.fuzz.originals import path_of
from tests.fuzz.runner import (
    CPU_LIMIT,
    HANG_AFTER,
    Hang,
    Outcome,
    Run,
    _alarm,
    _classify,
    run_cli,
    traceback_detail,
)
from tests.processes import children

FAKE_SSH = Path(__file__).with_name("fake_ssh.py")
HOST = "fake"
RULES_ENV = "IBDTOOL_FAKE_REMOTE"
ENTRIES = ("pull", "push", "report")
#: the real file the remote serves: page-compressed (a data range a page), 608 KiB
SOURCE_KIND = "mariadb-fcrc32-lz4"
NAME = "t.ibd"


def ssh_command() -> str:
    return f"{sys.executable} {FAKE_SSH}"


@dataclass(frozen=True)
class Scene:
    """A work directory: ``remote/`` (what the agent serves and where a push lands),
    ``local/out/`` (where a pull lands); ``local/`` itself must stay as it is."""

    root: Path

    @property
    def remote(self) -> Path:
        return self.root / "remote"

    @property
    def local(self) -> Path:
        return self.root / "local"

    @property
    def out(self) -> Path:
        return self.local / "out"

    @property
    def source(self) -> Path:
        return self.remote / NAME

    @property
    def local_source(self) -> Path:
        return self.local / NAME

    @property
    def pushed(self) -> Path:
        return self.remote / "in"

    def reset(self) -> None:
        """The remote file, the local one, empty destinations; whatever a run left, gone."""
        if not self.source.exists():
            self.remote.mkdir(parents=True, exist_ok=True)
            self.local.mkdir(parents=True, exist_ok=True)
            for path in (self.source, self.local_source):
                _sparse_copy(path_of(SOURCE_KIND), path)
        for folder in (self.out, self.pushed):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
        for folder in (self.root, self.remote, self.local):
            for p in folder.iterdir():
                if p.name not in {"remote", "local", "out", "in", NAME}:
                    _remove(p)

    def strays(self) -> list[str]:
        """What a pull left where it must not: files outside ``out/`` or not the copy's names,
        and special mode bits on what it wrote."""
        found = []
        for folder, allowed in (
            (self.root, {"remote", "local"}),
            (self.local, {"out", NAME}),
            (self.remote, {"in", NAME}),
        ):
            found += [str(p) for p in folder.iterdir() if p.name not in allowed]
        names = {NAME, f".{NAME}.ibdtool-part", f".{NAME}.ibdtool-part.json"}
        for p in self.out.iterdir():
            if p.name not in names:
                found.append(str(p))
            elif stat.S_IMODE(p.lstat().st_mode) & 0o7002:
                found.append(f"{p} mode {stat.S_IMODE(p.lstat().st_mode):o}")
        return found


def _sparse_copy(src: Path, dst: Path) -> None:
    """The source with its zero blocks as holes (git keeps none): a data range a page."""
    data = src.read_bytes()
    block = 4096
    with open(dst, "wb") as f:
        f.truncate(len(data))
        for at in range(0, len(data), block):
            piece = data[at : at + block]
            if piece.count(0) != len(piece):
                f.seek(at)
                f.write(piece)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)


# --- the three entry points ---------------------------------------------------------------------


def cli_args(entry: str, scene: Scene) -> tuple[tuple[str, ...], str]:
    """(``ibdtool`` arguments but the last, the last): as :func:`runner.run_cli` takes them."""
    ssh = ("-e", ssh_command())
    if entry == "pull":
        return ("copy", *ssh, "--json", f"{HOST}:{scene.source}"), f"{scene.out}/"
    if entry == "push":
        return ("copy", *ssh, "--json", str(scene.local_source)), f"{HOST}:{scene.pushed}/"
    return ("report", *ssh, "--format", "jsonl"), f"{HOST}:{scene.remote}"


def _inprocess(entry: str, scene: Scene, fetch: bool = True) -> None:
    """The entry point's engine in this process, as the CLI calls it; raises what it raises.
    ``report``: small files fetched whole and decoded here (``fetch``, as the CLI does), or
    read a range at a time (the path of a large file)."""
    from ibdtool.copy import CopyOptions
    from ibdtool.copy import remote as rc
    from ibdtool.errors import IbdtoolError
    from ibdtool.report import batch as rp
    from ibdtool.report import remote as fleet

    cfg = rc.SshConfig((sys.executable, str(FAKE_SSH)))
    if entry == "report":
        items: list[Any] = []
        opts = rp.ScanOptions()
        fleet.scan_host(HOST, [str(scene.remote)], cfg, opts, items.append, fetch=fetch)
        rows = [fleet.decode_item(item)[1] for item in items]
        for row in rows:
            error = row.get("error") or ""
            if re.search(r"unexpected \w+:", error):
                raise AssertionError(f"a bug reported as a row: {error}")
            if row.get("kind") == "host":
                raise IbdtoolError(error)
        for row in rows:  # a file that could not be read: the CLI exits 2 with its line
            error = row.get("error") or ""
            if error:
                raise IbdtoolError(error if error.startswith(f"{HOST}:") else f"{HOST}: {error}")
        return
    sessions = rc.Sessions(cfg)
    try:
        session = sessions.get(HOST)
        opts = CopyOptions()
        if entry == "pull":
            rc.pull(session, rc.Location(HOST, str(scene.source)), f"{scene.out}/", opts,
                    want_dir=False)  # fmt: skip
        else:
            rc.push(session, str(scene.local_source), rc.Location(HOST, f"{scene.pushed}/"),
                    opts, want_dir=False)  # fmt: skip
    finally:
        sessions.close()


def run_inprocess(
    entry: str, scene: Scene, hang_after: float = HANG_AFTER, fetch: bool = True
) -> Run:
    """One entry point against the remote as the rules in the environment make it
    (``fetch``: see :func:`_inprocess`)."""
    from ibdtool.errors import ExitCode, IbdtoolError

    start = time.process_time()
    command = (entry,)
    detail = ""
    before = set(live_ssh_children())
    try:
        with _alarm(hang_after):
            _inprocess(entry, scene, fetch)
    except IbdtoolError as exc:
        outcome, detail = Outcome.CLEAN_ERROR, exc.message
        if exc.exit_code != ExitCode.BAD_INPUT or not _one_line_naming_host(exc.message):
            outcome, detail = Outcome.TRACEBACK, f"exit {int(exc.exit_code)}: {exc.message!r}"
    except Hang as exc:
        return Run(command, Outcome.HANG, None, hang_after, 0, str(exc))
    except MemoryError:
        outcome, detail = Outcome.OVER_LIMIT, "MemoryError"
    except (Exception, RecursionError) as exc:
        outcome, detail = Outcome.TRACEBACK, traceback_detail(exc)
    else:
        outcome = Outcome.OK
    cpu = time.process_time() - start
    if outcome.good and cpu > CPU_LIMIT:
        outcome, detail = Outcome.OVER_LIMIT, f"{cpu:.2f} s CPU"
    strays = scene.strays()
    if strays:
        outcome, detail = Outcome.TRACEBACK, f"written where it must not be: {strays}"
    left = sorted(set(live_ssh_children()) - before)
    if left:
        outcome, detail = Outcome.TRACEBACK, f"ssh left running after the run: pids {left}"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return Run(command, outcome, None, cpu, rss, detail)


def live_ssh_children() -> list[int]:
    """The fake ssh processes this process started that are still running (zombies reaped by
    nobody count too): a session the engine gave up on must not outlive its run."""
    found = []
    for pid in children(os.getpid()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if FAKE_SSH.name.encode() in cmdline:
            found.append(pid)
    return found


def run_in_cli(entry: str, scene: Scene) -> Run:
    """The same through ``python -m ibdtool.cli`` under the runner's limits."""
    command, last = cli_args(entry, scene)
    run = run_cli(command, Path(last), classify=_classify_report if entry == "report" else None)
    strays = scene.strays()
    if strays:
        return Run(run.command, Outcome.TRACEBACK, run.exit_code, run.cpu, run.rss,
                   f"written where it must not be: {strays}")  # fmt: skip
    named = _one_line_naming_host(run.detail.removeprefix("ibdtool: error: "))
    if run.outcome is Outcome.CLEAN_ERROR and not named:
        return Run(run.command, Outcome.TRACEBACK, run.exit_code, run.cpu, run.rss,
                   f"error not naming the host: {run.detail}")  # fmt: skip
    return run


def _classify_report(
    command: tuple[str, ...], code: int, out: bytes, err: bytes, cpu: float, rss: int
) -> Run:
    """``report``: a host that failed is its error row, then the count of failed hosts on
    stderr, exit 2 (two lines, where the runner's classifier wants one); else as the runner."""
    lines = err.decode(errors="replace").splitlines()
    failed = "ibdtool: error: 1 of 1 hosts failed (see their rows)"
    bug = re.search(r"unexpected \w+:", lines[0]) if lines else None
    if code == 2 and len(lines) == 2 and lines[1] == failed and not bug:
        return _classify(command, code, out, (lines[0] + "\n").encode(), cpu, rss)
    return _classify(command, code, out, err, cpu, rss)


def _one_line_naming_host(message: str) -> bool:
    printable = all(c.isprintable() for c in message)
    return printable and (message.startswith(f"{HOST}:") or f" {HOST}:" in message)


# --- the rules ---------------------------------------------------------------------------------

_HOSTILE_VALUES: tuple[Any, ...] = (
    -1, 0, 1, 3, 511, 4095, 2**31, 2**32, 2**32 + 1, 2**63 - 1, 2**63, 2**64, 10**40, -(2**63),
    0.5, float("1e308"), True, False, None, "", "x", "12", [], {}, [1, 2], [[0, 1]], {"a": 1},
    "../x", "../../etc/cron.d/x", "/tmp/abs", ".", "..", "a/b", "a\x00b", "\x1b]0;pwned\x07",
    "x\ny", "\udcff", "x" * 50_000, 0o6777, 0o7777, 0o4755,
)  # fmt: skip
#: the keys of every reply, and paths into them
_KEYS: tuple[list[Any], ...] = tuple(
    [k] if isinstance(k, str) else list(k)
    for k in (
        "ok", "error", "protocol", "codecs", "python", "name", "size", "mode", "uid", "gid",
        "atime_ns", "mtime_ns", "allocated", "fs_block", "identity", ("identity", "size"),
        ("identity", "ino"), "dest", "free", "start", "notes", ("notes", 0), "window", "done",
        "bytes_written", "root", "dir", "datadir", "files", ("files", 0), ("files", 0, 0),
        ("files", 0, 1), ("files", 0, 2), "unlisted", "more", "handle", "fiemap", ("fiemap", 0),
        ("fiemap", 3), "sums", "crcs", ("crcs", 0), "whole", "siblings", ("siblings", 0), "dense",
        ("siblings", 1),
    )
)  # fmt: skip
_BAD_JSON: tuple[bytes, ...] = (
    b"\xff\xfe{}", b'{"ok": true, "error": "\xc3"}', b"[]", b"null", b"1e999999", b'{"ok": true',
    b'"x"', b"", b'{"ok": false, "error": {"x": 1}}', b'{"ok": false}',
    b'{"ok": false, "error": "\\u001b[2J\\u0007 gone"}', b'{"ok": "yes"}', b"NaN",
)  # fmt: skip
_LENGTHS = (0, 1, 2**31, 2**32 - 1)


def _value(c: Chooser) -> Any:
    v = c.choice(_HOSTILE_VALUES)
    if c.integer(0, 3) == 0:  # deep: a value nested far past any reply's shape
        return _nest(v, c.choice((2, 100, 900)))
    return v


def _nest(v: Any, depth: int) -> Any:
    for _ in range(depth):
        v = [v]
    return v


def _ranges(c: Chooser, size: int) -> list[list[int]]:
    kind = c.integer(0, 8)
    if kind == 0:  # unsorted
        return [[8192, 12288], [0, 4096]]
    if kind == 1:  # overlapping
        return [[0, 8192], [4096, 12288]]
    if kind == 2:  # past the end
        return [[0, 4096], [size, size + 4096]]
    if kind == 3:  # far past the end
        return [[2**63, 2**64 - 1]]
    if kind == 4:  # empty ranges
        return [[4096, 4096]]
    if kind == 5:  # a range a byte, every other byte: millions of bogus ranges
        return [[i, i + 1] for i in range(0, 64, 2)]
    if kind == 6:  # start > end
        return [[8192, 4096]]
    if kind == 7:  # the whole file: honest but dense
        return [[0, size]]
    return []


def random_rules(entry: str, c: Chooser) -> list[dict[str, Any]]:
    """One to three rules for the frames of ``entry``'s session (see :mod:`.fake_ssh`)."""
    kinds = {"pull": "JJMDDKE", "push": "JJJJ", "report": "JJJJMDDEER"}[entry]
    rules = []
    for _ in range(c.integer(1, 3)):
        kind = c.choice(kinds)
        nth = c.integer(0, 6 if kind == "J" else 3)
        rules.append({"kind": kind, "nth": nth, **_op(kind, c)})
    return rules


def _op(kind: str, c: Chooser) -> dict[str, Any]:
    generic = c.integer(0, 9)
    if generic == 0:
        return {"op": "length", "value": c.choice(_LENGTHS)}
    if generic == 1:
        return c.choice(({"op": "end"}, {"op": "end", "before": True}, {"op": "drop"}))
    if generic == 2:
        return {"op": "cut", "at": c.integer(0, 40)}
    if generic == 3:
        extra = c.choice((b"", b"\x00" * 9, os.urandom(c.integer(1, 64))))
        return {"op": "insert", "as": c.choice("JMDKERZ"), "hex": extra.hex()}
    if kind == "J":
        if c.integer(0, 9) == 0:
            return {"op": "deep", "n": c.choice((100_000, 2_000_000)), "obj": c.integer(0, 1)}
        if c.integer(0, 4) == 0:
            return {"op": "payload", "hex": c.choice(_BAD_JSON).hex()}
        path = c.choice(_KEYS)
        if c.integer(0, 5) == 0:
            return {"op": "del", "path": path}
        return {"op": "set", "path": path, "value": _value(c)}
    if kind == "M":
        what = c.integer(0, 3)
        if what == 0:
            return {"op": "bomb", "n": c.choice((1 << 20, 64 << 20, 1 << 30))}
        if what == 1:
            return {"op": "payload", "hex": os.urandom(c.integer(0, 48)).hex()}
        if what == 2:
            return {"op": "flip", "at": c.integer(0, 64)}
        if what == 3 and c.integer(0, 3) == 0:  # millions of ranges, a byte each
            return {"op": "comb", "step": c.choice((2, 4096)), "len": 1, "upto": 1 << 22}
        return {"op": "ranges", "ranges": _ranges(c, 622592)}
    if kind == "D":
        what = c.integer(0, 3)
        if what == 0:
            return {"op": "body_bomb", "n": c.choice((1 << 20, 256 << 20, 1 << 30))}
        if what == 1:
            return {"op": "flip", "at": c.integer(0, 4096)}
        field = c.choice(((0, ">I"), (4, ">B"), (5, ">I"), (9, ">Q"), (17, ">I"), (21, ">Q")))
        top = {">I": 2**32, ">B": 2**8, ">Q": 2**64}[field[1]]
        value = c.choice((0, 1, 2**20, 2**21 + 1, 622592, top - 1, c.integer(0, top - 1)))
        return {"op": "pack", "at": field[0], "fmt": field[1], "value": value}
    if kind == "K":
        at, fmt = c.choice(((0, ">I"), (4, ">I")))
        return {"op": "pack", "at": at, "fmt": fmt, "value": c.integer(0, 2**32 - 1)}
    if kind == "R":
        return {"op": "payload", "hex": os.urandom(c.integer(0, 64)).hex()}
    return c.choice(({"op": "drop"}, {"op": "end", "before": True}))


def with_rules(rules: list[dict[str, Any]], fn: Callable[[], Run]) -> Run:
    """``fn()`` with the rules in the environment the fake ssh reads."""
    import json

    os.environ[RULES_ENV] = json.dumps(rules)
    try:
        return fn()
    finally:
        os.environ.pop(RULES_ENV, None)
