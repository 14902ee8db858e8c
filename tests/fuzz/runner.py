"""Run a reader on one file and say how it ended: ok, clean error, traceback, hang, over-limit.

Two ways. :func:`run_cli` starts ``python -m ibdtool.cli COMMAND FILE`` as a script would,
under an address-space limit (``RLIMIT_AS``) and a wall-clock timeout, and reads the child's
own CPU time and peak RSS from ``wait4``. :func:`run_inprocess` calls the engine's entry points
directly (the long run's throughput), with an interval timer for hangs and the CPU clock.

The promise checked (README, "Hostile input"): a file under 2 MB is answered within
:data:`CPU_LIMIT` seconds of CPU and :data:`RSS_LIMIT` bytes of memory; the answer is data
(exit 0, or 1 for ``checksum`` and ``report --fail-on`` findings) or one line on stderr and
exit 2 — never a traceback.
"""

from __future__ import annotations

import enum
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.catalog import REPO

CPU_LIMIT = 2.0  # seconds of CPU a command may spend on a file under 2 MB
RSS_LIMIT = 200 << 20  # peak resident memory
AS_LIMIT = 1 << 30  # RLIMIT_AS: a runaway allocation fails here instead of taking the machine
HANG_AFTER = 30.0  # wall seconds: well past CPU_LIMIT even on a loaded machine


class Outcome(enum.Enum):
    OK = "ok"
    CLEAN_ERROR = "clean error"
    TRACEBACK = "traceback"
    HANG = "hang"
    OVER_LIMIT = "over-limit"

    @property
    def good(self) -> bool:
        return self in (Outcome.OK, Outcome.CLEAN_ERROR)


@dataclass(frozen=True)
class Run:
    """How one command ended on one file."""

    command: tuple[str, ...]
    outcome: Outcome
    exit_code: int | None
    cpu: float
    rss: int
    detail: str

    def describe(self) -> str:
        return (
            f"{' '.join(self.command)}: {self.outcome.value} (exit {self.exit_code}, "
            f"{self.cpu:.2f} s CPU, {self.rss >> 20} MiB): {self.detail}"
        )


#: every reader the CLI has, as run on one file (``report`` in its flat, streaming form too)
CLI_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("inspect", "--json"),
    ("pages", "--csv"),
    ("pages", "--json"),
    ("checksum",),
    ("sdi",),
    ("simulate", "--json"),
    ("report", "--format", "jsonl", "--jobs", "1"),
    ("records", "--json"),
)
#: exit codes that are answers: 1 is "found" for checksum (invalid pages) and report flags
ANSWER_CODES = {0, 1}


#: a small launcher between the test process and the command: it sets the limits, forks and
#: execs the command, and reports the command's own rusage on a pipe. A child forked (or
#: vforked) straight from a big pytest worker would inherit that worker's RSS high-water mark
#: at exec, so ``ru_maxrss`` would measure the worker, not the command.
_LAUNCHER = """
import os, resource, signal, sys
limit, report = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
pid = os.fork()
if pid == 0:
    os.close(report)
    os.execv(sys.argv[3], sys.argv[3:])
_, status, usage = os.wait4(pid, 0)
os.write(report, ("%r %r %r" % (usage.ru_utime + usage.ru_stime, usage.ru_maxrss, status)).encode())
code = os.waitstatus_to_exitcode(status)
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(
        HOME="/tmp", NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(REPO), COLUMNS="100"
    )
    return env


def run_cli(
    command: tuple[str, ...],
    path: Path,
    hang_after: float = HANG_AFTER,
    classify: Callable[[tuple[str, ...], int, bytes, bytes, float, int], Run] | None = None,
) -> Run:
    """``python -m ibdtool.cli *command path`` under the limits, classified (by ``classify``
    when given: ``(command, exit code, stdout, stderr, cpu, rss)``).

    The child is reaped with ``wait4`` (not Popen's wait) to read its own CPU time and peak
    RSS; its output goes to temporary files, so nothing blocks on a full pipe.
    """
    argv = [sys.executable, "-m", "ibdtool.cli", *command, str(path)]
    report_r, report_w = os.pipe()
    launcher = [sys.executable, "-c", _LAUNCHER, str(AS_LIMIT), str(report_w), *argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                launcher,
                cwd=REPO,
                env=_env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                pass_fds=(report_w,),
                start_new_session=True,
            )
        finally:
            os.close(report_w)
        with os.fdopen(report_r, "rb") as report:
            deadline = time.monotonic() + hang_after
            while True:
                pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    os.killpg(proc.pid, signal.SIGKILL)
                    os.wait4(proc.pid, 0)
                    proc.returncode = -signal.SIGKILL
                    detail = f"no answer in {hang_after:.0f} s"
                    return Run(command, Outcome.HANG, None, hang_after, 0, detail)
                time.sleep(0.005)
            proc.returncode = code = os.waitstatus_to_exitcode(status)
            fields = report.read().split()
        out.seek(0)
        err.seek(0)
        cpu, maxrss = (float(fields[0]), int(fields[1])) if len(fields) == 3 else (0.0, 0)
        return (classify or _classify)(command, code, out.read(), err.read(), cpu, maxrss * 1024)


def _classify(
    command: tuple[str, ...], code: int, out: bytes, err: bytes, cpu: float, rss: int
) -> Run:
    text = err.decode(errors="replace")
    lines = [line for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ibdtool: error: ")]
    talk = all(line.startswith("ibdtool: ") for line in lines)

    def run(outcome: Outcome, detail: str) -> Run:
        return Run(command, outcome, code, cpu, rss, detail)

    if "Traceback (most recent call last)" in text:
        return run(Outcome.TRACEBACK, lines[-1] if lines else "")
    if "out of memory" in text or code in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT):
        return run(Outcome.OVER_LIMIT, lines[-1] if lines else f"killed by signal {-code}")
    if cpu > CPU_LIMIT or rss > RSS_LIMIT:
        return run(Outcome.OVER_LIMIT, f"{cpu:.2f} s CPU, {rss >> 20} MiB")
    if code == 2 and len(errors) == 1 and talk:
        return run(Outcome.CLEAN_ERROR, errors[0])
    if code in ANSWER_CODES and not errors and talk:
        return run(Outcome.OK, f"{len(out)} bytes out")
    return run(Outcome.TRACEBACK, f"exit {code} with stderr {text[-300:]!r}")


# --- in-process ------------------------------------------------------------------------------


class Hang(Exception):
    """Raised by the interval timer inside a reader that did not come back."""


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise Hang(f"no answer in {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _sdi(path: Path) -> Any:
    from ibdtool.parsers.sdi import ibd2sdi_shape
    from ibdtool.tablespace.reader import Tablespace

    with Tablespace(path) as ts:
        import json

        return json.dumps(ibd2sdi_shape(ts.sdi()), indent=2, default=str)


def _inspect(path: Path) -> Any:
    from ibdtool.tablespace.inspect import inspect_path

    return inspect_path(path).to_json()


def _checksum(path: Path) -> Any:
    from ibdtool.tablespace.checksum import check_file

    return check_file(str(path), jobs=1)


def _pages(path: Path) -> Any:
    """The rows through the decoder, and ``pages --json``'s lines from the stored bytes
    (``ibdtool.tablespace.pages_json``), which must be those rows byte for byte, or the same
    error."""
    import json

    from ibdtool.errors import InputError
    from ibdtool.tablespace.page_rows import read_page_rows
    from ibdtool.tablespace.pages_json import json_lines

    encode = json.JSONEncoder().encode
    try:
        expected = "".join(encode(row) + "\n" for row in read_page_rows(str(path)))
    except InputError as exc:
        try:
            "".join(json_lines(str(path), jobs=1))
        except InputError:
            raise exc from None
        raise AssertionError(f"pages --json read what the decoder refused: {exc}") from None
    got = "".join(json_lines(str(path), jobs=1))
    if got != expected:
        raise AssertionError("pages --json lines differ from the decoder's rows")
    return expected.count("\n")


def _layouts(path: Path) -> Any:
    """The page view of every page (``ibdtool page``, the TUI): both images laid out by their
    families, zip index pages rebuilt with their fill."""
    from ibdtool.tablespace.page_dump import dump_from
    from ibdtool.tablespace.reader import Tablespace

    with Tablespace(path) as ts:
        for n in range(ts.n_pages):
            dump_from(ts, n)
        ts.free_window(0, ts.n_pages)  # the XDES descriptors


def _simulate(path: Path) -> Any:
    """Every default scenario on a sample of pages, in this process (zip pages rebuilt)."""
    from ibdtool.advise.recommend import simulation_json
    from ibdtool.advise.simulate import simulate_path

    return simulation_json(simulate_path(path, sample=24, jobs=1))


def _records(path: Path) -> Any:
    """``records`` of the clustered index: every leaf page, every external chain followed."""
    from ibdtool.tablespace.records import open_records

    run = open_records(str(path))
    try:
        return sum(1 for _ in run.events())
    finally:
        run.ts.close()


def _native(path: Path) -> Any:
    """The compiled chunk loop of full_crc32 scans over the file's bytes at every page size,
    against the Python path (:mod:`tests.fuzz.native_chunks`): a crash ends the run, a
    different answer is an AssertionError (a traceback)."""
    from tests.fuzz.native_chunks import compare_bytes

    return compare_bytes(path.read_bytes())


#: in-process entry points: name -> function of the path
ENTRY_POINTS: dict[str, Callable[[Path], Any]] = {
    "records": _records,
    "inspect": _inspect,
    "checksum": _checksum,
    "pages": _pages,
    "sdi": _sdi,
    "layouts": _layouts,
    "simulate": _simulate,
    "native": _native,
}


def traceback_detail(exc: BaseException) -> str:
    """What a traceback's innermost frame says: the exception and the file:line it was raised at."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb else "?"
    return f"{type(exc).__name__}: {exc} at {where}"


def run_inprocess(name: str, path: Path, hang_after: float = HANG_AFTER) -> Run:
    """``ENTRY_POINTS[name](path)`` in this process (or the text reader of that name in
    :data:`tests.fuzz.text_inputs.TEXT_ENTRY_POINTS`); an ``InputError`` is a clean error."""
    from ibdtool.errors import InputError

    if name in ENTRY_POINTS:
        fn = ENTRY_POINTS[name]
    else:
        from tests.fuzz.text_inputs import TEXT_ENTRY_POINTS

        fn = TEXT_ENTRY_POINTS[name][0]
    start = time.process_time()
    command = (name,)
    try:
        with _alarm(hang_after):
            fn(path)
    except InputError as exc:
        outcome, detail = Outcome.CLEAN_ERROR, exc.message
        if "\n" in exc.message:
            outcome = Outcome.TRACEBACK
    except Hang as exc:
        return Run(command, Outcome.HANG, None, hang_after, 0, str(exc))
    except MemoryError:
        outcome, detail = Outcome.OVER_LIMIT, "MemoryError"
    except (Exception, RecursionError) as exc:
        outcome, detail = Outcome.TRACEBACK, traceback_detail(exc)
    else:
        outcome, detail = Outcome.OK, ""
    cpu = time.process_time() - start
    if outcome.good and cpu > CPU_LIMIT:
        outcome, detail = Outcome.OVER_LIMIT, f"{cpu:.2f} s CPU"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return Run(command, outcome, None, cpu, rss, detail)
