"""The long fuzz run: 100,000+ damaged real files, each read by one in-process reader.

    .venv/bin/python bench/fuzz_long.py [--inputs 100000] [--minutes M] [--seed S]
    .venv/bin/python bench/fuzz_long.py --text --inputs 12000 --sample-every 500

``--text`` runs the issue-20 entry points instead (:mod:`tests.fuzz.text_inputs`: names
through every text front end and, sampled, the real CLI and the TUI; journals; ``--schema``
text; option and login-path files) and writes its own subsection of RESULTS.md.

The inputs come from the mutators of ``tests/fuzz`` driven by hypothesis (generation only:
a long run counts, it does not stop at the first failure). Work is done in chunks, each in a
fresh worker process under ``RLIMIT_AS``: a worker runs every input in-process (throughput)
through one of the readers in turn, and every ``--sample-every``-th input also through a CLI
command in a subprocess (``tests.fuzz.runner.run_cli``: limits, wait4 rusage). Each run is
classified ok / clean error / traceback / hang / over-limit; any input not ok or a clean error
is saved under ``bench/work/fuzz/`` with what was done to it. A worker that dies (a crash the
classifier could not see) is counted against the input it was on, saved too, and the rest of
its chunk goes to a later chunk. A fault of the harness itself (a full disk while it writes the
input) is no verdict on ibdtool: the worker stops with ``HARNESS_FAULT`` and its input is
re-planned. The last result, with counts per class, replaces its section of RESULTS.md.
``--minutes`` stops early and records how far it got and the command for the rest (a later
``--seed`` gives fresh inputs).

``--remote`` runs the agent's replies instead (issue 20): ``copy HOST:PATH`` (pull), ``copy
FILE HOST:DIR/`` (push) and ``report HOST:PATH`` in turn against the real agent behind
``tests/fuzz/fake_ssh.py``, its frames changed by seeded rules (:mod:`tests.fuzz.remote`), each
run in-process and every ``--sample-every``-th also through the CLI (in-process, every other
``report`` input reads its file a range at a time, the path of a large file, the others fetch
it whole); a run that wrote outside
the destination or gave a special mode bit counts as a traceback. Its result goes to the
subsection "agent replies" of "Issue 20: fuzzing the new entry points".
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "work" / "fuzz"
HARNESS_FAULT = 3  # a worker's exit status when the harness itself failed (its disk, say)
WORKER_AS = 3 << 30  # the worker's own cap; each input is also checked against RSS_LIMIT


def _head() -> str:
    """The commit the run's code is at (and "+ changes" when the tree differs from it)."""
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip() or "unknown"  # fmt: skip
    dirty = subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", "HEAD", "--", "ibdtool",
                            "parsers", "tui", "tests"]).returncode  # fmt: skip
    return f"{rev} + uncommitted changes" if dirty else rev


def _took(seconds: float) -> str:
    """How long a run took, in the unit that says something (a 28 s run is not "0 minutes")."""
    return f"{seconds:.0f} seconds" if seconds < 120 else f"{seconds / 60:.0f} minutes"


def generated(seed: int, count: int) -> Any:
    """The decorator every long run's test takes: ``count`` inputs generated from ``seed``, no
    shrinking, no example database, no deadline, no health check."""
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis import seed as hseed

    def wrap(fn: Any) -> Any:
        limits = settings(
            max_examples=count,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        return hseed(seed)(limits(fn))

    return wrap


def text_worker(seed: int, count: int, sample_every: int, first: int) -> None:
    """``--text``: ``count`` inputs over :data:`tests.fuzz.text_inputs.TEXT_ENTRY_POINTS` in
    turn (names through every text front end, journals, --schema text, option and login-path
    files); every ``sample_every``-th name also through the real CLI and the TUI on a file of
    that name. One JSON line per 50 inputs and at the end, as :func:`worker`."""
    import contextlib
    import tempfile

    from hypothesis import given

    from tests.fuzz.runner import RSS_LIMIT, Outcome, run_inprocess
    from tests.fuzz.text_inputs import TEXT_ENTRY_POINTS, cli_on_name, tui_on_name

    names = sorted(TEXT_ENTRY_POINTS)
    counts: Counter[str] = Counter()
    sampled: Counter[str] = Counter()
    state = {"n": 0, "names": 0}
    current = OUT / f"current-{os.getpid()}.txt"
    scratch = Path(tempfile.mkdtemp(prefix="fuzz-names-"))
    for warm_name in names:  # import what each entry point uses before the baseline is taken
        with contextlib.suppress(Exception):
            current.write_bytes(b"[client]\nuser=x\n" if warm_name != "names" else b"x")
            run_inprocess(warm_name, current)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def report(final: bool = False) -> None:
        line = {"done": state["n"], "counts": counts, "cli": sampled, "final": final}
        print(json.dumps(line), flush=True)

    def save(data: bytes, what: str) -> None:
        n = first + state["n"]
        (OUT / f"text-input-{n}.bin").write_bytes(data)
        (OUT / f"text-input-{n}.txt").write_text(what + "\n")

    def run_entry(name: str, quota: int) -> None:
        @generated(seed, quota)
        @given(TEXT_ENTRY_POINTS[name][1])
        def one(data: bytes) -> None:
            if state["n"] >= count:
                return
            current.write_bytes(data)
            # the peak before the run: hypothesis's own first draws in a worker (seen: +200 MiB
            # on its first example) are the harness's memory, not the reader's
            before = max(baseline, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
            run = run_inprocess(name, current)
            outcome = run.outcome
            grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
            if outcome.good and grown > RSS_LIMIT:
                outcome = Outcome.OVER_LIMIT
            counts[f"{name}: {outcome.value}"] += 1
            if not outcome.good:
                save(data, run.describe())
            if name == "names":
                state["names"] += 1
                if sample_every and state["names"] % sample_every == 1:
                    text = data.decode("utf-8", "surrogateescape")
                    for label, fn in (("cli", cli_on_name), ("tui", tui_on_name)):
                        try:
                            leak = fn(text, scratch)
                        except Exception as exc:
                            leak = f"{label}: {type(exc).__name__}: {exc}"
                        sampled[f"{label}: {'leak' if leak else 'ok'}"] += 1
                        if leak:
                            save(data, leak)
            state["n"] += 1
            if state["n"] % 50 == 0:
                report()
            if outcome is Outcome.OVER_LIMIT and grown > RSS_LIMIT:
                report(final=True)
                os._exit(0)

        one()

    for i, entry in enumerate(names):  # an equal share each, the first ones take the rest
        run_entry(entry, count // len(names) + (i < count % len(names)))
    report(final=True)


def worker(seed: int, count: int, sample_every: int, first: int) -> None:
    """Run ``count`` inputs; print one JSON line per 50 inputs and at the end."""
    from hypothesis import given
    from hypothesis import strategies as st

    from tests.fuzz.mutators import warm
    from tests.fuzz.originals import FUZZ_FILES, original
    from tests.fuzz.runner import (
        CLI_COMMANDS,
        ENTRY_POINTS,
        RSS_LIMIT,
        Outcome,
        run_cli,
        run_inprocess,
    )
    from tests.fuzz.strategies import Case, damaged

    warm()
    kinds = sorted(FUZZ_FILES)
    for kind in kinds:
        original(kind)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    names = sorted(ENTRY_POINTS)
    counts: Counter[str] = Counter()
    cli_counts: Counter[str] = Counter()
    state = {"n": 0}
    current = OUT / f"current-{os.getpid()}.ibd"

    def report(final: bool = False) -> None:
        line = {"done": state["n"], "counts": counts, "cli": cli_counts, "final": final}
        print(json.dumps(line), flush=True)

    def save(data: bytes, done: list[str], what: str) -> None:
        n = first + state["n"]
        (OUT / f"input-{n}.ibd").write_bytes(data)
        (OUT / f"input-{n}.txt").write_text(f"{what}\n" + "\n".join(done) + "\n")

    cases = st.sampled_from(kinds).flatmap(damaged)

    @generated(seed, count)
    @given(cases)
    def one(case: Case) -> None:
        if state["n"] >= count:
            return
        kind, data, done = case.kind, case.data, list(case.done)
        try:
            current.write_bytes(data)
            (OUT / f"current-{os.getpid()}.txt").write_text(kind + "\n" + "\n".join(done) + "\n")
        except OSError as exc:  # the harness's own disk (seen: ENOSPC), not ibdtool's fault
            report()
            print(f"harness: cannot write the input: {exc}", file=sys.stderr, flush=True)
            os._exit(HARNESS_FAULT)
        name = names[state["n"] % len(names)]
        run = run_inprocess(name, current)
        outcome = run.outcome
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - baseline
        if outcome.good and grown > RSS_LIMIT:
            outcome = Outcome.OVER_LIMIT
        counts[outcome.value] += 1
        if not outcome.good:
            save(data, [kind, *done], run.describe())
        if sample_every and state["n"] % sample_every == 0:
            command = CLI_COMMANDS[(state["n"] // sample_every) % len(CLI_COMMANDS)]
            cli = run_cli(command, current)
            cli_counts[cli.outcome.value] += 1
            if not cli.outcome.good:
                save(data, [kind, *done], cli.describe())
        state["n"] += 1
        if state["n"] % 50 == 0:
            report()
        if outcome is Outcome.OVER_LIMIT and grown > RSS_LIMIT:
            report(final=True)  # the peak cannot go down: a fresh worker takes the rest
            os._exit(0)

    one()
    report(final=True)


def remote_worker(seed: int, count: int, sample_every: int, first: int) -> None:
    """``count`` inputs of the agent's replies; one JSON line per 50 and at the end, counts
    keyed ``"ENTRY OUTCOME"``."""
    import random

    from tests.fuzz.mutators import RandomChooser
    from tests.fuzz.remote import (
        ENTRIES,
        Scene,
        random_rules,
        run_in_cli,
        run_inprocess,
        with_rules,
    )
    from tests.fuzz.runner import RSS_LIMIT, Outcome

    # a remote that stops answering is dropped after 1.5 s (600 by default) so that such inputs
    # are answered within the 30 s a run may take
    os.environ["IBDTOOL_AGENT_IDLE"] = "1.5"
    scene = Scene(OUT / f"remote-{os.getpid()}")
    scene.reset()
    for entry in ENTRIES:  # warm: imports, the page decoder, the fake ssh
        with_rules([], lambda e=entry: run_inprocess(e, scene))  # type: ignore[misc]
        scene.reset()
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    counts: Counter[str] = Counter()
    cli_counts: Counter[str] = Counter()
    current = OUT / f"current-{os.getpid()}.txt"

    def report(done: int, final: bool = False) -> None:
        line = {"done": done, "counts": counts, "cli": cli_counts, "final": final}
        print(json.dumps(line), flush=True)

    for n in range(count):
        entry = ENTRIES[(first + n) % len(ENTRIES)]
        rules = random_rules(entry, RandomChooser(random.Random(f"{seed}:{first + n}")))
        # every other report input read a range at a time (a large file's path), the others
        # fetched whole (a small file's, as the CLI runs reach them)
        fetch = (first + n) // len(ENTRIES) % 2 == 0
        story = json.dumps({"entry": entry, "rules": rules, "fetch": fetch})
        try:
            current.write_text(story + "\n")
            scene.reset()
        except OSError as exc:
            report(n)
            print(f"harness: cannot write the input: {exc}", file=sys.stderr, flush=True)
            os._exit(HARNESS_FAULT)
        run = with_rules(rules, functools.partial(run_inprocess, entry, scene, fetch=fetch))
        outcome = run.outcome
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - baseline
        if outcome.good and grown > RSS_LIMIT:
            outcome = Outcome.OVER_LIMIT
        counts[f"{entry} {outcome.value}"] += 1
        if not outcome.good:
            (OUT / f"remote-input-{seed}-{first + n}.txt").write_text(
                f"{story}\n{run.describe()}\n"
            )
        if sample_every and n % sample_every == 0:
            scene.reset()
            cli = with_rules(rules, functools.partial(run_in_cli, entry, scene))
            cli_counts[f"{entry} {cli.outcome.value}"] += 1
            if not cli.outcome.good:
                (OUT / f"remote-cli-{seed}-{first + n}.txt").write_text(
                    f"{story}\n{cli.describe()}\n"
                )
        if (n + 1) % 50 == 0:
            report(n + 1)
        if outcome is Outcome.OVER_LIMIT and grown > RSS_LIMIT:
            report(n + 1, final=True)  # the peak cannot go down: a fresh worker takes the rest
            os._exit(0)
    report(count, final=True)


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_AS, WORKER_AS))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _chunk(
    args: argparse.Namespace, seed: int, count: int, first: int, deadline: float | None
) -> tuple[int, Counter[str], Counter[str], bool]:
    """One worker process: (inputs done, in-process counts, CLI counts, died)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--worker",
            f"--seed={seed}",
            f"--inputs={count}",
            f"--sample-every={args.sample_every}",
            f"--first={first}",
            *(["--remote"] if args.remote else []),
            *(["--text"] if args.text else []),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_limit,
    )
    last: dict[str, Any] = {"done": 0, "counts": {}, "cli": {}}
    assert proc.stdout is not None
    stopped = False
    for line in proc.stdout:
        last = json.loads(line)
        if deadline is not None and time.monotonic() > deadline:
            proc.kill()
            stopped = True
            break
    code = proc.wait()
    n = int(last["done"])
    counts, cli = Counter(last["counts"]), Counter(last["cli"])
    if code == HARNESS_FAULT:  # no verdict on the input it was writing: the driver re-plans it
        for suffix in ("ibd", "txt"):
            (OUT / f"current-{proc.pid}.{suffix}").unlink(missing_ok=True)
        return n, counts, cli, False
    died = code != 0 and not stopped
    if died:  # the worker died on an input: count it, keep it
        counts["over-limit" if code in (-9, 137) else "traceback"] += 1
        for suffix in ("ibd", "txt"):
            src = OUT / f"current-{proc.pid}.{suffix}"
            if src.exists():
                src.rename(OUT / f"crash-{first + n}.{suffix}")
        n += 1
    for suffix in ("ibd", "txt"):
        (OUT / f"current-{proc.pid}.{suffix}").unlink(missing_ok=True)
    return n, counts, cli, died


def drive(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(BENCH))
    from common import append_results

    OUT.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    deadline = start + args.minutes * 60 if args.minutes else None
    total: Counter[str] = Counter()
    cli_total: Counter[str] = Counter()
    lock = threading.Lock()
    state = {"done": 0, "planned": 0, "crashes": 0, "seed": args.seed}

    def lane() -> None:
        while True:
            with lock:
                if state["planned"] >= args.inputs:
                    return
                if deadline is not None and time.monotonic() > deadline:
                    return
                count = min(args.chunk, args.inputs - state["planned"])
                first, seed = state["planned"], state["seed"]
                state["planned"] += count
                state["seed"] += 1
            n, counts, cli, died = _chunk(args, seed, count, first, deadline)
            with lock:
                if n < count and (deadline is None or time.monotonic() < deadline):
                    # a worker that stopped early (died, or a harness fault) leaves the rest
                    # of its chunk to a later chunk with a fresh seed, so the total is reached
                    state["planned"] -= count - n
                state["done"] += n
                state["crashes"] += died
                total.update(counts)
                cli_total.update(cli)
                rate = state["done"] / max(1e-9, time.monotonic() - start)
                print(
                    f"{state['done']} inputs, {dict(total)}, cli {dict(cli_total)}, {rate:.1f}/s",
                    flush=True,
                )

    lanes = [threading.Thread(target=lane) for _ in range(args.parallel)]
    for t in lanes:
        t.start()
    for t in lanes:
        t.join()
    elapsed = time.monotonic() - start
    if args.remote:
        _write_remote(
            args, state["done"], total, cli_total, state["crashes"], elapsed, state["seed"]
        )
        return
    if args.text:
        _write_text(args, state["done"], total, cli_total, state["crashes"], elapsed, state["seed"])
        return
    _write(
        args,
        state["done"],
        total,
        cli_total,
        state["crashes"],
        elapsed,
        state["seed"],
        append_results,
    )


def _write(
    args: argparse.Namespace,
    done: int,
    total: Counter[str],
    cli_total: Counter[str],
    crashes: int,
    elapsed: float,
    next_seed: int,
    append_results: object,
) -> None:
    classes = ("ok", "clean error", "traceback", "hang", "over-limit")
    rows = "\n".join(f"| {c} | {total.get(c, 0):,} | {cli_total.get(c, 0):,} |" for c in classes)
    rest = args.inputs - done
    from tests.fuzz.runner import CLI_COMMANDS, ENTRY_POINTS

    readers = " / ".join(ENTRY_POINTS)
    commands = ", ".join(f"`{' '.join(c)}`" for c in CLI_COMMANDS)
    body = f"""
Inputs: **{done:,}** damaged copies of the {len(_kinds())} real files of `tests/fuzz/originals.py`
(seeds {args.seed}–{next_seed - 1}, chunks of {args.chunk}, {args.parallel} workers), each read
in-process by one of
{readers} in turn; one in {args.sample_every} also
through a CLI command ({commands}) in a subprocess under RLIMIT_AS 1 GiB.
Limits per run: 2 s of CPU, 200 MB RSS, 30 s wall (hang).
{_took(elapsed)}, {done / max(elapsed, 1e-9):.1f} inputs/s; workers that died: {crashes}.

| class | in-process runs | CLI runs |
|---|---:|---:|
{rows}

Inputs not ok or a clean error are kept in `bench/work/fuzz/` (`input-N.ibd` and what was done).
Command: `.venv/bin/python bench/fuzz_long.py --inputs {args.inputs} --seed {args.seed}`
"""
    if rest > 0:
        body += (
            f"\nStopped at {done:,} of {args.inputs:,} by `--minutes {args.minutes}`; the rest: "
            f"`.venv/bin/python bench/fuzz_long.py --inputs {rest} --seed {next_seed}`\n"
        )
    append_results("Fuzz: the long run", body)  # type: ignore[operator]


def _write_remote(
    args: argparse.Namespace,
    done: int,
    total: Counter[str],
    cli_total: Counter[str],
    crashes: int,
    elapsed: float,
    next_seed: int,
) -> None:
    from common import append_subsection, machine

    from tests.fuzz.remote import ENTRIES

    classes = ("ok", "clean error", "traceback", "hang", "over-limit")
    head = "| entry point | " + " | ".join(classes) + " |\n|---|" + "---:|" * len(classes)
    rows = []
    for entry in ENTRIES:
        cells = " | ".join(
            f"{total.get(f'{entry} {c}', 0):,} ({cli_total.get(f'{entry} {c}', 0):,})"
            for c in classes
        )
        rows.append(f"| {entry} | {cells} |")
    died = total.get("traceback", 0) + total.get("over-limit", 0)
    load = os.getloadavg()
    body = f"""
Machine: {machine()}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end
(2 cores shared with other sessions).

Inputs: **{done:,}** sessions with the real agent (`tests/fuzz/fake_ssh.py` as the ssh
command), each with 1–3 seeded rules changing its frames (`tests/fuzz/remote.py`: hostile
field values and types, non-UTF-8 and 2,000,000-deep JSON, unsorted / overlapping /
out-of-file / million-range / zlib-bomb range maps, lying piece tables and bombs in data frames,
wrong checkpoints, lying frame lengths up to 4 GiB, frames dropped, cut, inserted, the stream
ended), entry points in turn; seeds {args.seed}–{next_seed - 1}, chunks of {args.chunk},
{args.parallel} workers. In-process runs (CLI runs of one input in {args.sample_every} in
brackets, a subprocess under RLIMIT_AS 1 GiB). Limits per run: 2 s of CPU, 200 MB RSS, 30 s wall;
a silent agent is dropped after 1.5 s (`IBDTOOL_AGENT_IDLE`). Oracle besides the class: nothing
written outside the destination, no setuid / setgid / sticky / world-write bit, a clean error is
one line naming the host. {_took(elapsed)}, {done / max(elapsed, 1e-9):.1f} inputs/s;
workers that died: {crashes} ({died} inputs counted against them).

{head}
{chr(10).join(rows)}

Inputs not ok or a clean error are kept as `bench/work/fuzz/remote-input-SEED-N.txt` (the rules).
Code: {_head()}.
Command: `.venv/bin/python bench/fuzz_long.py --remote --inputs {args.inputs} --seed {args.seed}`
"""
    append_subsection(
        "Issue 20: fuzzing the new entry points",
        "agent replies: copy pull, copy push, report host:PATH",
        body,
    )


TEXT_TITLE = "Issue 20: fuzzing the new entry points"
TEXT_SUBTITLE = "Names, journals, --schema text, option files (bench/fuzz_long.py --text)"


def _write_text(
    args: argparse.Namespace,
    done: int,
    total: Counter[str],
    sampled: Counter[str],
    crashes: int,
    elapsed: float,
    next_seed: int,
) -> None:
    """This run's subsection of the issue-20 section of RESULTS.md (the section is shared with
    the remote-agent entry points: only this subsection is replaced)."""
    import datetime as dt
    import re

    sys.path.insert(0, str(BENCH))
    from common import RESULTS, machine

    from tests.fuzz.text_inputs import TEXT_ENTRY_POINTS

    classes = ("ok", "clean error", "traceback", "hang", "over-limit")
    rows = "\n".join(
        f"| {name} | " + " | ".join(f"{total.get(f'{name}: {c}', 0):,}" for c in classes) + " |"
        for name in sorted(TEXT_ENTRY_POINTS)
    )
    sums = " | ".join(
        f"**{sum(v for k, v in total.items() if k.endswith(': ' + c)):,}**" for c in classes
    )
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()
    body = f"""### {TEXT_SUBTITLE} ({stamp})

Machine: {machine()}; load average at the end {load[0]:.1f} (2 cores shared with other work).
Inputs: **{done:,}** generated by hypothesis from real examples (`tests/fuzz/text_inputs.py`;
seeds {args.seed}–{next_seed - 1}, chunks of {args.chunk}, {args.parallel} workers), each run
in-process under the fuzz limits (2 s CPU, 200 MB RSS growth, 30 s wall = hang):
`names` (a name with control characters, bidi marks, Rich markup, undecodable bytes through
every text front end: the CLI's SafeConsole tables and lines, `checksum`, `pages` text/CSV,
`records` text/JSON, `report` JSON/CSV/Markdown/HTML, what the TUI's widgets get; a raw
control character in any output, or JSON not keeping the exact name, counts as a traceback),
`journal` (`Journal.state` on a damaged real journal), `schema` (`load_schemas` on damaged
real DDL, 4,097+ columns, deep parentheses, 1 MB literals), `options` (`read_option_file`
with `!include` of devices), `login` (a damaged `mysql_config_editor` file).
{_took(elapsed)}, {done / max(elapsed, 1e-9):.1f} inputs/s; workers that died: {crashes}.

| entry point | ok | clean error | traceback | hang | over-limit |
|---|---:|---:|---:|---:|---:|
{rows}
| all | {sums} |

Sampled: one `names` input in {args.sample_every} also through the real CLI (`inspect`,
`checksum`, `report` on a copy of a real tablespace named by it) and the TUI (browser and
tablespace view by Textual pilot, every screen line scanned): {dict(sorted(sampled.items()))}.
Failing inputs would be kept in `bench/work/fuzz/text-input-N.*`.
Command: `.venv/bin/python bench/fuzz_long.py --text --inputs {args.inputs} --seed {args.seed}`
"""
    if args.inputs - done > 0:
        body += f"\nStopped at {done:,} of {args.inputs:,} by `--minutes {args.minutes}`.\n"
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    sub = re.compile(rf"\n### {re.escape(TEXT_SUBTITLE)} \(.*?(?=\n##|\Z)", re.S)
    text = sub.sub("", text)
    head = f"\n## {TEXT_TITLE}\n"
    if head not in text:
        text = text.rstrip() + "\n" + head
    at = text.index(head) + len(head)
    text = text[:at] + "\n" + body.strip() + "\n" + text[at:]
    RESULTS.write_text(text.rstrip() + "\n")


def _kinds() -> list[str]:
    from tests.fuzz.originals import FUZZ_FILES

    return sorted(FUZZ_FILES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sample-every", type=int, default=500)
    parser.add_argument("--parallel", type=int, default=2, help="worker processes at a time")
    parser.add_argument("--minutes", type=float, default=0.0, help="stop after this long")
    parser.add_argument("--remote", action="store_true", help="fuzz the agent's replies (issue 20)")
    parser.add_argument(
        "--text",
        action="store_true",
        help="the text entry points of issue 20 (names, journals, --schema, option files)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # tests.fuzz, run as a script from anywhere
    if args.worker and args.remote:
        remote_worker(args.seed, args.inputs, args.sample_every, args.first)
    elif args.worker and args.text:
        text_worker(args.seed, args.inputs, args.sample_every, args.first)
    elif args.worker:
        worker(args.seed, args.inputs, args.sample_every, args.first)
    else:
        drive(args)


if __name__ == "__main__":
    main()
