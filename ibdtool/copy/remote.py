"""``ibdtool copy`` across hosts: the system ssh, with the agent sent down the same channel.

The remote host needs only ``python3`` (3.6 or later), not ibdtool: :func:`AgentSession.open`
runs ``ssh [options] -- HOST python3 -c '<bootstrap>'`` through the system ``ssh`` (so the
user's keys, ``~/.ssh/config``, ProxyJump and known_hosts apply), then writes the source of
:mod:`ibdtool.copy.agent` on ssh's stdin, where the bootstrap reads and runs it. The remote
command line is a fixed string; paths travel inside the protocol, never through the remote
shell, so a path with spaces, quotes or ``;`` is copied, never executed.

Push (local → remote) computes the plan here (data ranges minus what re-punching drops) and
streams only those bytes; pull (remote → local) receives the remote file's data ranges and
re-punches the copy here before it is renamed; remote → remote relays the frames through this
host. Pieces are zstd-compressed when both ends have zstd (``--compress auto``). The receiving
end verifies each window by reading it back after ``fdatasync`` and keeps a state file so
``--resume`` continues after the last verified window.

``ssh`` comes from ``-e/--rsh`` (rsync style), else ``$IBDTOOL_SSH``, else ``ssh``; each
``--ssh-option`` becomes ``-o OPTION``.
"""

from __future__ import annotations

import contextlib
import fcntl
import heapq
import os
import queue
import select
import shlex
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ibdtool.copy import agent, replies
from ibdtool.copy.local import (
    CopyFailed,
    CopyInterrupted,
    CopyOptions,
    CopyProgress,
    CopyResult,
    ProgressFn,
    Ticker,
    VerifyFailed,
    check_pages,
    is_tablespace,
    iter_align_inward,
    iter_zero_blocks,
    open_source,
    plan_for,
    scan_progress,
    source_in_use_note,
    wants_repunch,
)
from ibdtool.copy.repunch import Needless, iter_needless
from ibdtool.errors import IbdtoolError
from ibdtool.fs import PackedRanges, read_allocation

#: Run by the remote python3: check the version, then read and run the agent from stdin. It
#: holds no quote, backslash, ``$`` or ``!``, so every common login shell passes it unchanged.
BOOTSTRAP = (
    "import sys;v=sys.version_info;"
    "v>=(3,6) or sys.exit('ibdtool-agent: python3 3.6 or later is needed, found %d.%d' % v[:2]);"
    "exec(compile(sys.stdin.buffer.read({n}),'ibdtool-agent','exec'))"
)
HANDSHAKE_LIMIT = 1 << 16
STDERR_LINES = 40
#: seconds an agent may stay silent while ibdtool waits for its answer before the session is
#: dropped (a remote that stops talking must not hold the run forever; ssh's keepalive only
#: sees a dead link). ``$IBDTOOL_AGENT_IDLE`` overrides it (tests). Not applied while ibdtool
#: itself is sending (a push under --bwlimit waits long between window answers).
AGENT_IDLE = 600.0


def _agent_idle() -> float:
    try:
        value = float(os.environ.get("IBDTOOL_AGENT_IDLE") or AGENT_IDLE)
    except ValueError:
        return AGENT_IDLE
    return value if 0 < value < float("inf") else AGENT_IDLE


#: the pipe from ssh's stdout, widened from 64 KiB (Linux ``F_SETPIPE_SZ``; an unprivileged
#: process may go up to ``/proc/sys/fs/pipe-max-size``, 1 MiB by default): a fetched file's
#: reply (~125 KB compressed) then goes through in one write and one read, not four of each
#: with the two sides waking each other between them
PIPE_BYTES = 1 << 20
F_SETPIPE_SZ = 1031


def _widen_pipe(fd: int) -> None:
    """Make the pipe ``fd`` reads hold :data:`PIPE_BYTES` (as much as allowed; a system
    without it keeps its own size)."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES)


class AgentOutput:
    """The agent's stdout, read with a limit on silence: :meth:`read` raises
    :class:`~ibdtool.copy_agent.Interrupted` when no byte came for ``idle`` seconds.

    The pipe is read without blocking into one buffer, reused, as much as it holds at a time
    (several frames of a reply in one call, then each handed out with one copy); ``select``
    waits only when it is empty."""

    #: the buffer's size to start with; it grows to the largest read asked for
    #: (:data:`~ibdtool.copy.agent.READ_CHUNK` at most: longer reads come a chunk at a time)
    BUFFER = 1 << 18

    def __init__(self, fd: int, idle: float | None, on_silence: Callable[[], None]) -> None:
        self.fd = fd
        self.idle = idle
        self.on_silence = on_silence
        self._buf = bytearray(self.BUFFER)
        self._start = self._end = 0
        os.set_blocking(fd, False)

    def read(self, n: int, idle: float | bool | None = True) -> bytes:
        limit = self.idle if idle is True else idle
        start, end = self._start, self._end
        if end - start < n:
            start, end = self._fill(n, limit)
        n = min(n, end - start)
        with memoryview(self._buf) as view:  # one copy, not a slice then its bytes
            out = bytes(view[start : start + n])
        start += n
        self._start, self._end = (0, 0) if start == end else (start, end)
        return out

    def _fill(self, n: int, limit: float | None) -> tuple[int, int]:
        """Read until ``n`` bytes are held (fewer: the stream ended); the bytes held, as
        ``(start, end)`` in the buffer."""
        start, end = self._start, self._end
        if start + n > len(self._buf):  # what is held to the front; room for n at least
            held = end - start
            if n > len(self._buf):
                grown = max(n, min(2 * len(self._buf), agent.READ_CHUNK))
                old, self._buf = self._buf, bytearray(grown)
                self._buf[:held] = old[start:end]
            else:
                self._buf[:held] = self._buf[start:end]
            start, end = 0, held
        while end - start < n:
            try:
                with memoryview(self._buf) as view:
                    got = os.readv(self.fd, [view[end:]])
            except BlockingIOError:
                ready, _, _ = select.select([self.fd], [], [], limit)
                if not ready:
                    self._start, self._end = start, end
                    self.on_silence()
                    raise agent.Interrupted(f"no answer for {limit:.0f} s") from None
                continue
            if not got:
                break
            end += got
        self._start, self._end = start, end
        return start, end


class _Unhurried:
    """:class:`AgentOutput` without the silence limit (the answers a push waits for while it
    sends)."""

    def __init__(self, out: AgentOutput) -> None:
        self.out = out

    def read(self, n: int) -> bytes:
        return self.out.read(n, None)


# --- locations -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """``[user@]host:path`` (``host`` set) or a local path."""

    host: str | None
    path: str

    def __str__(self) -> str:
        return f"{self.host}:{self.path}" if self.host else self.path


def parse_location(arg: str) -> Location:
    """Split an argument as scp does: ``host:path`` is remote unless a ``/`` comes before the
    first ``:`` (write ``./a:b`` for a local file with a colon). ``[v6]:path`` works."""
    if arg.startswith("/") or arg.startswith("."):
        return Location(None, arg)
    if "[" in arg.split(":", 1)[0] and "]:" in arg:
        host, _, path = arg.partition("]:")
        host = host.replace("[", "")
    else:
        host, sep, path = arg.partition(":")
        if not sep or not host or "/" in host:
            return Location(None, arg)
    if host.startswith("-") or any(c.isspace() for c in host):
        raise IbdtoolError(f"{arg}: not a valid host name")
    return Location(host, path)


#: ssh options ibdtool adds unless the user gives them with -o: a silent host is dropped after
#: ServerAliveInterval × ServerAliveCountMax seconds (one error row, not a hang)
KEEPALIVE = (("ServerAliveInterval", "15"), ("ServerAliveCountMax", "4"))


@dataclass(frozen=True)
class SshConfig:
    command: tuple[str, ...] = ("ssh",)
    options: tuple[str, ...] = ()
    remote_python: str = "python3"

    @classmethod
    def from_cli(
        cls, rsh: str | None, options: tuple[str, ...], remote_python: str | None
    ) -> SshConfig:
        command = rsh or os.environ.get("IBDTOOL_SSH") or "ssh"
        argv = tuple(shlex.split(command))
        if not argv:
            raise IbdtoolError("the ssh command is empty")
        return cls(argv, options, remote_python or "python3")

    def argv(self, host: str, remote_command: str) -> list[str]:
        out = list(self.command)
        for opt in self.options:
            out += ["-o", opt]
        if os.path.basename(self.command[0]) == "ssh":
            # a host that stops answering (hung, cable pulled) ends its session after a minute
            # instead of holding the run forever; ssh keeps the first value it is given, so an
            # -o from the user above wins (and these beat ~/.ssh/config's; --ssh-option says so)
            given = {o.split("=", 1)[0].strip().lower() for o in self.options}
            for name, value in KEEPALIVE:
                if name.lower() not in given:
                    out += ["-o", f"{name}={value}"]
        return [*out, "--", host, remote_command]


# --- one ssh connection running the agent --------------------------------------------------------


class AgentSession:
    """The agent on one host, over one ssh process; serves many files in turn."""

    def __init__(self, host: str, cfg: SshConfig) -> None:
        self.host = host
        self.cfg = cfg
        self.hello: dict[str, Any] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._stderr_thread: threading.Thread | None = None
        self._stdout: AgentOutput | None = None
        self.silent = False  # the agent stopped answering: the session was dropped
        self.sent = 0
        self.received = 0

    # -- start and stop ------------------------------------------------------------------------

    def open(self) -> AgentSession:
        code = Path(agent.__file__).read_bytes()
        remote = (
            f"{shlex.quote(self.cfg.remote_python)} -c {shlex.quote(BOOTSTRAP.format(n=len(code)))}"
        )
        argv = self.cfg.argv(self.host, remote)
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except FileNotFoundError:
            raise IbdtoolError(f"{argv[0]}: ssh client not found") from None
        assert self.proc.stdout is not None
        _widen_pipe(self.proc.stdout.fileno())
        self._stdout = AgentOutput(self.proc.stdout.fileno(), _agent_idle(), self._silent)
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()
        try:
            try:
                self.stdin.write(code)
                self.stdin.flush()
                self._handshake()
            except agent.ProtocolError as exc:
                raise self.lie(exc) from None
            except (OSError, agent.AgentError, agent.Interrupted, ValueError):
                raise self.failure(starting=True) from None
        except BaseException:
            # a session that never started is nobody's to close: its ssh would wait on our
            # end of its stdin for as long as this process lives (seen: one per failed start)
            self.kill()
            raise
        return self

    @property
    def stdin(self) -> IO[bytes]:
        assert self.proc is not None and self.proc.stdin is not None
        return self.proc.stdin

    @property
    def stdout(self) -> AgentOutput:
        assert self._stdout is not None
        return self._stdout

    def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            if line:
                self._stderr.append(line)

    def _handshake(self) -> None:
        seen = b""
        while not seen.endswith(agent.MAGIC):
            byte = self.stdout.read(1)
            if not byte:
                raise agent.Interrupted("no agent")
            seen += byte
            if len(seen) > HANDSHAKE_LIMIT:
                break
        if not seen.endswith(agent.MAGIC):
            raise agent.AgentError("no agent")
        junk = seen[: -len(agent.MAGIC)].decode(errors="replace").strip()
        if junk:
            raise IbdtoolError(
                f"{self.host}: the remote shell printed text before the agent started "
                f"({agent.one_line(junk, 80)!r}); make the remote login files quiet for "
                "non-interactive shells"
            )
        self.hello = replies.check_reply("hello", agent.read_json(self.stdout))

    def close(self) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            if proc.poll() is None:
                agent.write_json(self.stdin, {"op": "bye"})
            self.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self.proc = None

    def _silent(self) -> None:
        self.silent = True
        self.kill()

    def kill(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()

    # -- messages --------------------------------------------------------------------------------

    def send_json(self, obj: dict[str, Any]) -> None:
        agent.write_json(self.stdin, obj)

    def send_frame(self, kind: bytes, payload: bytes) -> None:
        agent.write_frame(self.stdin, kind, payload)
        self.stdin.flush()

    def reply(self, shape: str) -> dict[str, Any]:
        """The next control message, checked to be a successful reply of ``shape``
        (:mod:`ibdtool.agent_replies`); a failure it reports or a lie is a
        :class:`CopyFailed` naming the host, a broken stream what :meth:`failure` says."""
        with self.speaking():
            return replies.check_reply(shape, agent.read_json(self.stdout))

    def read_reply(self) -> dict[str, Any]:
        """The next control message, a successful reply of a shape the caller then checks."""
        with self.speaking():
            return agent.expect_ok(agent.read_json(self.stdout))

    def check(self, shape: str, msg: dict[str, Any]) -> dict[str, Any]:
        with self.speaking():
            return replies.check_reply(shape, msg)

    def recv_frame(self, kinds: tuple[bytes, ...] | None = None) -> tuple[bytes, bytes]:
        return agent.read_frame(self.stdout, kinds)

    @contextlib.contextmanager
    def speaking(self) -> Iterator[None]:
        """What the agent sent or failed to send, as one line naming the host: a lie or a
        failure it reports (:class:`CopyFailed`), a broken stream (:meth:`failure`). Errors of
        this host's own (its disk, its files) pass through."""
        try:
            yield
        except (agent.ProtocolError, agent.RemoteFailed) as exc:
            raise self.lie(exc) from None
        except (OSError, agent.Interrupted):
            raise self.failure() from None

    def lie(self, exc: agent.AgentError) -> CopyFailed:
        """The agent failed or broke the protocol: one line naming the host."""
        return CopyFailed(f"{self.host}: {exc}")

    @property
    def codecs(self) -> list[str]:
        return list(self.hello.get("codecs", ["none"]))

    # -- failures --------------------------------------------------------------------------------

    def _exit_status(self, wait: float = 5.0) -> int | None:
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return None

    def failure(self, starting: bool = False, agent_error: str | None = None) -> IbdtoolError:
        """The one-line error for a session that broke."""
        if agent_error:
            return CopyFailed(f"{self.host}: {agent_error}")
        if self.silent:
            return CopyFailed(f"{self.host}: no answer for {_agent_idle():.0f} s; dropped")
        status = self._exit_status()
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout=2)
        lines = [agent.one_line(line) for line in self._stderr]
        last = lines[-1] if lines else ""
        for line in lines:
            if line.startswith("ibdtool-agent:"):
                return CopyFailed(f"{self.host}: {line.split(':', 1)[1].strip()}")
        if starting and status == 127:
            return CopyFailed(
                f"{self.host}: {self.cfg.remote_python} not found on the remote host (ibdtool "
                "runs a small python3 program there; install python3 or pass "
                "--remote-python PATH)"
            )
        if starting and status == 255:
            return CopyFailed(f"{self.host}: ssh failed: {last or 'exit status 255'}")
        if starting:
            why = last or f"exit status {status}"
            return CopyFailed(f"{self.host}: the remote agent did not start: {why}")
        why = f"ssh exited with status {status}" if status is not None else "the stream broke"
        if last:
            why += f": {last}"
        return CopyFailed(f"{self.host}: connection lost ({why})")


class Sessions:
    """One agent session per host, opened on first use."""

    def __init__(self, cfg: SshConfig) -> None:
        self.cfg = cfg
        self._open: dict[str, AgentSession] = {}
        self._unreachable: dict[str, IbdtoolError] = {}

    def get(self, host: str, role: str = "") -> AgentSession:
        """The session for ``host``; a relay asks for a second one with another ``role``.
        A host whose agent could not be started is not tried again in this run."""
        if host in self._unreachable:
            raise self._unreachable[host]
        key = f"{role}\0{host}"
        session = self._open.get(key)
        if session is None or session.proc is None or session.proc.poll() is not None:
            try:
                session = self._open[key] = AgentSession(host, self.cfg).open()
            except IbdtoolError as exc:
                self._unreachable[host] = exc
                raise
        return session

    def drop(self, host: str) -> None:
        for key in [k for k in self._open if k.split("\0", 1)[1] == host]:
            self._open.pop(key).kill()

    def close(self) -> None:
        for session in self._open.values():
            session.close()
        self._open.clear()


# --- watching the receiver's answers while streaming ---------------------------------------------


class Replies:
    """Reads the receiving agent's messages in a thread while this one streams to it."""

    def __init__(self, session: AgentSession, on_window: Callable[[dict[str, Any]], None]):
        self.session = session
        self.on_window = on_window
        self.done: queue.Queue[dict[str, Any] | BaseException] = queue.Queue()
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                msg = agent.read_json(_Unhurried(self.session.stdout))
                self.error = replies.reply_failure(msg)
                if self.error is not None:
                    self.done.put(msg)
                    return
                if msg.get("done"):
                    self.done.put(replies.check_reply("done", msg))
                    return
                self.on_window(replies.check_reply("window", msg))
        except agent.ProtocolError as exc:
            self.error = str(exc)
            self.done.put(exc)
        except BaseException as exc:
            self.done.put(exc)

    def wait(self) -> dict[str, Any]:
        """The receiver's last answer, once everything was sent: within the silence limit."""
        idle = _agent_idle()
        try:
            item = self.done.get(timeout=idle)
        except queue.Empty:
            self.session._silent()
            raise self.session.failure() from None
        if isinstance(item, BaseException) or self.error is not None:
            raise self.session.failure(agent_error=self.error)
        return item


# --- codecs --------------------------------------------------------------------------------------


def choose_codec(wanted: str, *sides: list[str], notes: list[str]) -> str:
    common = [c for c in agent.available_codecs() if all(c in s for s in sides)]
    if wanted == "auto":
        if "zstd" in common:
            return "zstd"
        notes.append(
            "the remote python3 has no zstd (pip install zstandard there, or Python 3.14+): "
            "sending uncompressed"
        )
        return "none"
    if wanted not in common:
        raise IbdtoolError(f"--compress {wanted}: not available on the remote host")
    return wanted


# --- push, pull, relay ---------------------------------------------------------------------------


@dataclass
class _Meter:
    """Counts for the progress line."""

    size: int
    progress: ProgressFn | None
    read: int = 0
    sent: int = 0
    dest_allocated: int = 0
    windows: int = 0
    due: Ticker = field(default_factory=Ticker)

    def piece(self, end: int, raw: int, wire: int) -> None:
        self.read += raw
        self.sent += wire
        if self.progress is not None and self.due():
            self.progress(
                CopyProgress("copy", end, self.size, self.read, self.sent, self.dest_allocated)
            )


def _interrupted(dest: str) -> CopyInterrupted:
    return CopyInterrupted(
        f"interrupted: the verified part of {dest} is kept; run the same command with "
        "--resume to continue"
    )


def _ask_for_source(session: AgentSession, src: Location) -> tuple[dict[str, Any], PackedRanges]:
    """``send``: the remote file's metadata and data ranges, checked; its name is the one
    the command line gives (:func:`local_name`), never the one the remote sends."""
    with session.speaking():
        session.send_json({"op": "send", "path": src.path})
        meta = session.reply("source")
        _, blob = session.recv_frame((b"M",))
        # SEEK_DATA finds data a block at a time: at most a range a block (4 KiB at most);
        # packed as the local data maps are (a page-compressed file has a range a page)
        ranges = agent.unpack_ranges(
            blob, meta["size"], min(meta["fs_block"], 4096), into=PackedRanges()
        )
    for key in ("ok", "fs_block"):
        meta.pop(key, None)
    meta["name"] = local_name(src)
    return meta, ranges


def local_name(src: Location) -> str:
    """The name a pulled file gets in a destination directory: the last part of the path on
    the command line. The remote's answer never names a local file."""
    name = os.path.basename(src.path.rstrip("/"))
    try:
        replies.file_name(name, "name")
    except agent.ProtocolError:
        raise CopyFailed(
            f"{src}: names no file to copy; give the path of a file on {src.host}"
        ) from None
    return name


def _sums_from_source(
    session: AgentSession, ranges: PackedRanges, window: int
) -> Callable[[int], list[int]]:
    """``--resume``: the CRC-32s of the remote source's first windows, read again there now."""

    def sums(count: int) -> list[int]:
        with session.speaking():
            session.send_json({"op": "sums", "window": window, "count": count})
            session.send_frame(b"M", agent.pack_ranges(ranges))
            crcs: list[int] = session.reply("sums")["crcs"]
            if len(crcs) != count:
                raise agent.ProtocolError(f"{len(crcs)} window sums, not the {count} asked")
        return crcs

    return sums


def _start_after_sums(
    session: AgentSession, windows: agent.Windows, ask: Callable[[int], list[int]]
) -> dict[str, Any]:
    """The receiver's answer to the plan: where to start. With --resume it first asks for
    the source's sums of the windows it would keep; ``ask(count)`` gives them."""
    msg = session.read_reply()
    if "sums" in msg:
        count = session.check("asks_sums", msg)["sums"]
        if count > len(windows):
            raise session.lie(
                agent.ProtocolError(f"sums of {count} windows asked, of {len(windows)}")
            )
        session.send_json({"op": "sums", "crcs": ask(count)})
        msg = session.read_reply()
    started = session.check("started", msg)
    if started["start"] > len(windows):
        raise session.lie(
            agent.ProtocolError(f"a start at window {started['start']} of {len(windows)}")
        )
    return started


def _receive_request(
    dst: Location, meta: dict[str, Any], opts: CopyOptions, want_dir: bool
) -> dict[str, Any]:
    return {
        "op": "receive",
        "path": dst.path,
        "meta": meta,
        "force": opts.force,
        "resume": opts.resume,
        "verify": opts.verify != "none",
        "want_dir": want_dir,
    }


def _stream_request(window: int, start: int, codec: str, opts: CopyOptions) -> dict[str, Any]:
    return {
        "op": "stream",
        "window": window,
        "start": start,
        "codec": codec,
        "verify": opts.verify != "none",
        "bwlimit": opts.bwlimit,
    }


def push(
    session: AgentSession,
    src: str,
    dst: Location,
    opts: CopyOptions,
    *,
    want_dir: bool,
    progress: ProgressFn | None = None,
) -> CopyResult:
    """Copy the local file ``src`` to ``dst`` on ``session``'s host."""
    t0 = time.monotonic()
    source = open_source(src)
    try:
        alloc = read_allocation(source.fd, with_extents=False)
        result = CopyResult(src, str(dst), source.size, alloc.allocated, verify=opts.verify)
        note = source_in_use_note(src)
        if note:
            result.notes.append(note)
        with session.speaking():
            session.send_json(_receive_request(dst, source.meta(), opts, want_dir))
        reply = session.reply("receiving")
        result.dest = f"{session.host}:{agent.one_line(reply['dest'])}"
        try:
            plan = plan_for(src, source, alloc, opts, reply["fs_block"], progress)
            codec = choose_codec(opts.compress, session.codecs, notes=result.notes)
        except BaseException:
            session.send_json({"op": "skip"})
            raise
        del alloc  # its data map (~2.5 bytes a range) is in the plan now: not kept twice
        result.notes += plan.notes
        result.needless, result.zero_block_bytes = plan.needless, plan.zero_block_bytes
        result.data_ranges, result.plan_bytes, result.codec = plan.data_ranges, plan.bytes, codec
        window = agent.choose_window(plan.bytes)
        windows = agent.Windows(plan.ranges, window)
        meter = _Meter(source.size, progress)
        try:
            session.send_json({"op": "plan", "window": window, "codec": codec})
            session.send_frame(b"M", agent.pack_ranges(plan.ranges))
            started = _start_after_sums(
                session, windows, lambda n: [source.window_crc(windows[i]) for i in range(n)]
            )
            result.notes += [agent.one_line(n) for n in started["notes"]]
            start = started["start"]
            result.windows = len(windows)
            # every window but the last holds exactly ``window`` bytes
            result.resumed_bytes = min(plan.bytes, start * window)

            def on_window(msg: dict[str, Any]) -> None:
                meter.dest_allocated = msg["allocated"]
                meter.windows += 1

            watcher = Replies(session, on_window)
            # an OSError means the receiver went away: its reply (or ssh's stderr) says why
            with contextlib.suppress(OSError):
                agent.send_stream(
                    session.stdin,
                    source,
                    windows,
                    start,
                    agent.Codec(codec),
                    verify=opts.verify != "none",
                    bwlimit=opts.bwlimit,
                    progress=meter.piece,
                )
            done = watcher.wait()
        except KeyboardInterrupt:
            session.kill()
            raise _interrupted(result.dest) from None
        except (agent.ProtocolError, agent.RemoteFailed) as exc:
            raise session.lie(exc) from None
        except agent.AgentError as exc:
            raise CopyFailed(str(exc)) from None
        except (OSError, agent.Interrupted):
            raise session.failure() from None
        except CopyFailed as exc:
            if meter.windows and "connection lost" in exc.message:
                exc = CopyFailed(f"{exc.message}; run the same command with --resume to continue")
            raise exc from None
        result.bytes_read, result.bytes_sent = meter.read, meter.sent
        result.dest_allocated = done["allocated"]
        result.notes += [agent.one_line(n) for n in done["notes"] if n not in result.notes]
        if opts.verify == "full" and plan.is_tablespace:
            if progress is not None:
                progress(CopyProgress("check", source.size, source.size))
            result.pages = check_pages(src)
            result.pages["where"] = "source (the copy reads back byte for byte the same)"
    finally:
        source.close()
    result.elapsed = time.monotonic() - t0
    return result


def pull(
    session: AgentSession,
    src: Location,
    dst: str,
    opts: CopyOptions,
    *,
    want_dir: bool,
    progress: ProgressFn | None = None,
) -> CopyResult:
    """Copy ``src`` on ``session``'s host to the local path ``dst``."""
    t0 = time.monotonic()
    meta, ranges = _ask_for_source(session, src)
    try:
        final = agent.resolve_destination(dst, meta["name"], want_dir)
        dest = agent.Destination(
            final,
            meta,
            force=opts.force,
            resume=opts.resume,
            verify=opts.verify != "none",
        )
    except agent.AgentError as exc:
        session.send_json({"op": "skip"})
        raise CopyFailed(str(exc)) from None
    result = CopyResult(str(src), final, meta["size"], meta["allocated"])
    result.verify, result.data_ranges, result.plan_bytes = opts.verify, len(ranges), 0
    meter = _Meter(result.logical_size, progress)
    finished = False
    try:
        codec = choose_codec(opts.compress, session.codecs, notes=result.notes)
        window = agent.choose_window(agent.plan_bytes(ranges))
        start = dest.prepare(ranges, window, source_sums=_sums_from_source(session, ranges, window))
        result.notes += dest.notes
        result.codec, result.windows = codec, len(dest.windows)
        result.plan_bytes = agent.plan_bytes(ranges)
        result.resumed_bytes = min(result.plan_bytes, start * window)
        session.send_json(_stream_request(window, start, codec, opts))
        session.send_frame(b"M", agent.pack_ranges(ranges))

        def on_window(index: int) -> None:
            meter.dest_allocated = dest.allocated()

        agent.receive_stream(
            session.stdout, dest, agent.Codec(codec), on_window=on_window, progress=meter.piece
        )
        result.bytes_read, result.bytes_sent = meter.read, meter.sent
        dest.drop_plan()  # the re-punch reads the part's data map: one map held, not two
        del ranges
        _repunch_received(dest, opts, result, progress)
        result.dest_allocated = dest.seal()
        result.notes += [n for n in dest.notes if n not in result.notes]
        tablespace = result.needless is not None or (
            final.endswith(".ibd") and is_tablespace(dest.part)
        )
        if opts.verify == "full" and tablespace:
            if progress is not None:
                progress(CopyProgress("check", dest.size, dest.size))
            result.pages = check_pages(dest.part)
            result.pages["where"] = "destination"
        dest.commit()
        finished = True
    except KeyboardInterrupt:
        dest.abandon(keep=True)
        session.kill()
        raise _interrupted(final) from None
    except agent.VerifyError as exc:
        raise VerifyFailed(str(exc)) from None
    except (agent.ProtocolError, agent.RemoteFailed) as exc:
        raise session.lie(exc) from None
    except agent.Interrupted:
        kept = dest.abandon(keep=True)
        err = session.failure()
        if kept:
            err = CopyFailed(f"{err.message}; run the same command with --resume to continue")
        raise err from None
    except agent.AgentError as exc:  # this host's side (its disk), for the file from there
        raise CopyFailed(f"{src}: {exc}") from None
    except OSError:
        raise session.failure() from None
    finally:
        if not finished and dest.fd >= 0:
            dest.abandon(keep=False)
    result.elapsed = time.monotonic() - t0
    return result


def _repunch_received(
    dest: agent.Destination, opts: CopyOptions, result: CopyResult, progress: ProgressFn | None
) -> None:
    """Pull: re-punch the received part file here, before it is sealed and renamed. The
    ranges to punch are made as they are punched (:func:`iter_needless`, the zero blocks of
    the data ranges, merged in order): none is kept, whatever the page count."""
    from ibdtool.tablespace import Tablespace

    alloc = read_allocation(dest.fd, with_extents=False)
    block = dest.fs_block
    zero_bytes = 0

    def zeros() -> Iterator[tuple[int, int]]:
        nonlocal zero_bytes
        src = agent.Source(dest.part)
        try:
            for start, end in iter_zero_blocks(src.read, alloc.data_ranges, block, lambda n: None):
                zero_bytes += end - start
                yield start, end
        finally:
            src.close()

    def punch(needless: Iterable[tuple[int, int]]) -> None:
        drop = iter_align_inward(needless, block)
        if opts.dig_holes:
            drop = merged(heapq.merge(drop, zeros()))
        dest.punch(drop)

    punched = False
    if wants_repunch(dest.final, opts.repunch):
        try:
            with Tablespace(dest.part) as ts:
                counts = Needless()
                result.needless = counts
                punch(iter_needless(ts, alloc, counts, scan_progress(progress, ts)))
                punched = True
        except IbdtoolError as exc:
            if opts.repunch:
                raise
            result.needless = None
            result.notes.append(f"not re-punched: {exc.message}")
    if not punched and opts.dig_holes:
        zero_bytes = 0
        punch(())
    result.zero_block_bytes = zero_bytes


def merged(ranges: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Ranges sorted by their starts, with those that touch or overlap joined, as they come."""
    held: tuple[int, int] | None = None
    for start, end in ranges:
        if end <= start:
            continue
        if held is not None and start <= held[1]:
            held = (held[0], max(held[1], end))
            continue
        if held is not None:
            yield held
        held = (start, end)
    if held is not None:
        yield held


def relay(
    src_session: AgentSession,
    src: Location,
    dst_session: AgentSession,
    dst: Location,
    opts: CopyOptions,
    *,
    want_dir: bool,
    progress: ProgressFn | None = None,
) -> CopyResult:
    """Remote to remote through this host (no re-punching: neither end has ibdtool)."""
    t0 = time.monotonic()
    meta, ranges = _ask_for_source(src_session, src)
    result = CopyResult(str(src), str(dst), meta["size"], meta["allocated"])
    result.verify, result.data_ranges = opts.verify, len(ranges)
    result.plan_bytes = agent.plan_bytes(ranges)
    try:
        with dst_session.speaking():
            dst_session.send_json(_receive_request(dst, meta, opts, want_dir))
        reply = dst_session.reply("receiving")
    except CopyFailed:
        src_session.send_json({"op": "skip"})
        raise
    result.dest = f"{dst_session.host}:{agent.one_line(reply['dest'])}"
    if opts.repunch:
        result.notes.append("not re-punched: neither end of a remote-to-remote copy has ibdtool")
    codec = choose_codec(opts.compress, src_session.codecs, dst_session.codecs, notes=result.notes)
    result.codec = codec
    window = agent.choose_window(result.plan_bytes)
    meter = _Meter(result.logical_size, progress)
    try:
        dst_session.send_json({"op": "plan", "window": window, "codec": codec})
        dst_session.send_frame(b"M", agent.pack_ranges(ranges))
        windows = agent.Windows(ranges, window)
        started = _start_after_sums(
            dst_session, windows, _sums_from_source(src_session, ranges, window)
        )
        start = started["start"]
        result.notes += [agent.one_line(n) for n in started["notes"]]
        result.windows = len(windows)
        result.resumed_bytes = min(result.plan_bytes, start * window)
        src_session.send_json(_stream_request(window, start, codec, opts))
        src_session.send_frame(b"M", agent.pack_ranges(ranges))

        def on_window(msg: dict[str, Any]) -> None:
            meter.dest_allocated = msg["allocated"]

        watcher = Replies(dst_session, on_window)
        try:
            while True:
                kind, payload = src_session.recv_frame((b"D", b"K", b"E", b"J"))
                if kind == b"J":
                    agent.expect_ok(agent.parse_json(payload))
                    raise agent.ProtocolError("a control message inside the data stream")
                dst_session.stdin.write(agent.FRAME.pack(kind, len(payload)))
                dst_session.stdin.write(payload)
                if kind == b"D":
                    end, raw = agent.batch_extent(payload)
                    meter.piece(end, raw, len(payload) + agent.FRAME.size)
                elif kind == b"E":
                    dst_session.stdin.flush()
                    break
                else:
                    dst_session.stdin.flush()
        except agent.AgentError as exc:
            raise CopyFailed(f"{src_session.host}: {exc}") from None
        except agent.Interrupted:
            raise src_session.failure() from None
        except OSError:
            pass  # the receiver went away: its reply says why
        done = watcher.wait()
    except KeyboardInterrupt:
        src_session.kill()
        dst_session.kill()
        raise _interrupted(result.dest) from None
    except (OSError, agent.Interrupted):
        raise dst_session.failure() from None
    result.bytes_read, result.bytes_sent = meter.read, meter.sent
    result.dest_allocated = done["allocated"]
    result.notes += [agent.one_line(n) for n in done["notes"] if n not in result.notes]
    result.elapsed = time.monotonic() - t0
    return result
