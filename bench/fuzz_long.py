"""The long fuzz run: 100,000+ damaged real files, each read by one in-process reader.

    .venv/bin/python bench/fuzz_long.py [--inputs 100000] [--minutes M] [--seed S]

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
"""

from __future__ import annotations

import argparse
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


def worker(seed: int, count: int, sample_every: int, first: int) -> None:
    """Run ``count`` inputs; print one JSON line per 50 inputs and at the end."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
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

    @hseed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
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
{elapsed / 60:.0f} minutes, {done / max(elapsed, 1e-9):.1f} inputs/s; workers that died: {crashes}.

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
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # tests.fuzz, run as a script from anywhere
    if args.worker:
        worker(args.seed, args.inputs, args.sample_every, args.first)
    else:
        drive(args)


if __name__ == "__main__":
    main()
