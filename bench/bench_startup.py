"""Issue 14: start-up time of ``ibdtool inspect tiny.ibd --json`` (goal ≤ 60 ms) and friends.

Run by hand:  PYTHONPATH=$PWD .venv/bin/python bench/bench_startup.py [--runs N]
              [--before DIR]   (another checkout, e.g. ``git archive main | tar -x -C DIR``)
              [--anchor DIR]   (an older checkout whose start-up was measured on an earlier
                                day, e.g. the commit that met the goal: how far the machine
                                itself moved since, in the same runs)
              [--also-python PY]  (another interpreter, e.g. a venv with
                                   ``pip install -e . --config-settings editable_mode=compat``)
              [--no-pyc]  (also this tree with no ``.pyc`` under PYTHONDONTWRITEBYTECODE=1:
                           every module compiled at every start, as an editable install was
                           before ``scripts/setup.sh`` compiled it)
              [--no-finder]  (also this tree under ``python -S`` with the venv's site-packages
                              on PYTHONPATH: the start a ``.pth`` path line would give, without
                              the editable install's finder and what it imports)
              [--installed PY]  (an interpreter with ibdtool installed from the wheel, run
                                 outside the tree, under PYTHONDONTWRITEBYTECODE=1)
              [--script LABEL=PATH ...]  (an installed console script, as a user runs it:
                                          e.g. the ``.venv/bin/ibdtool`` that
                                          ``scripts/setup.sh`` made in a fresh clone; run
                                          outside the tree, nothing on PYTHONPATH)

(The issue's own start-up row, with innochecksum beside it, is :func:`startup_row`, run by
bench_issue14.py.)

Every command is run ``--runs`` times, interleaved with ``python -c pass`` in the same loop, so
a busy moment on a shared machine hurts every row alike; the table has the best (min) and
median wall and CPU time of each (CPU: user + system of the process, from ``wait4``) and the
load average. The trees are byte-compiled first (an installed ibdtool has its ``.pyc``; a
checkout run with ``PYTHONDONTWRITEBYTECODE`` would compile every module on every start).
``tiny.ibd`` is ``samples/mariadb/p4k-plain.ibd`` (16 pages of 4K) copied without its ``.cfg``;
the ``.cfg`` row reads the sample in place, ``.cfg`` beside it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
from pathlib import Path

from common import IBDTOOL, REPO, WORK, append_results
from sidebyside import Contender, Goal, Row, run_once


def _compile(tree: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for pkg in ("ibdtool", "parsers", "tui"):
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(tree / pkg)],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )


def _once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    # run from the tree itself: ``python -m`` puts the working directory first on sys.path
    return run_once(cmd, env=env, cwd=env.get("PYTHONPATH", str(WORK)).split(os.pathsep)[0])


def tiny_file() -> Path:
    """``tiny.ibd``: the 16-page 4K sample without its ``.cfg``."""
    WORK.mkdir(parents=True, exist_ok=True)
    tiny = WORK / "tiny.ibd"
    shutil.copyfile(REPO / "samples" / "mariadb" / "p4k-plain.ibd", tiny)
    return tiny


def startup_row(runs: int = 20) -> Row:
    """Issue 14's start-up row: ``ibdtool inspect --json tiny.ibd`` (goal ≤ 60 ms; the venv's
    ``ibdtool`` script where there is one, as a user runs it) beside ``python -c pass`` and
    ``innochecksum tiny.ibd``, ``runs`` interleaved runs."""
    _compile(REPO)
    tiny = tiny_file()
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env = {**base_env, "PYTHONPATH": str(REPO)}
    row = [Contender("`python -c pass`", [sys.executable, "-c", "pass"], env=base_env)]
    innochecksum = shutil.which("innochecksum")
    if innochecksum:
        row.append(Contender("`innochecksum tiny.ibd`", [innochecksum, str(tiny)]))
    row.append(
        Contender(
            "`ibdtool inspect --json tiny.ibd`",
            [*IBDTOOL, "inspect", "--json", str(tiny)],
            goal=Goal("seconds", 0.060),
            env=env,
            cwd=str(REPO),
        )
    )
    return Row("start-up: `inspect tiny.ibd --json`", row, repeat=runs)


def _pyc_rows(
    no_pyc: bool, installed: str | None, tiny: Path, base_env: dict[str, str]
) -> list[tuple[str, str, list[str], dict[str, str]]]:
    """Rows of the installed command as it starts on a machine that sets
    PYTHONDONTWRITEBYTECODE (which stops Python writing ``.pyc``, not reading them): this tree
    copied without ``__pycache__`` (nothing compiled, so every module is compiled at every
    start), and a wheel's install (pip compiles what it installs)."""
    rows: list[tuple[str, str, list[str], dict[str, str]]] = []
    dont_write = {**base_env, "PYTHONDONTWRITEBYTECODE": "1"}
    if no_pyc:
        bare = WORK / "nopyc-tree"
        shutil.rmtree(bare, ignore_errors=True)
        for pkg in ("ibdtool", "parsers", "tui"):
            shutil.copytree(
                REPO / pkg,
                bare / pkg,
                symlinks=True,  # ibdtool/parsers and ibdtool/tui stay links
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        env = {**dont_write, "PYTHONPATH": str(bare)}
        ibd = [sys.executable, "-m", "ibdtool.cli"]
        rows += [
            (
                "now, no .pyc",
                "`ibdtool inspect --json tiny.ibd`",
                [*ibd, "inspect", "--json", str(tiny)],
                env,
            ),
            ("now, no .pyc", "`ibdtool --help`", [*ibd, "--help"], env),
        ]
    if installed:
        ibd = [installed, "-m", "ibdtool.cli"]
        rows += [
            (
                "wheel install",
                "`ibdtool inspect --json tiny.ibd`",
                [*ibd, "inspect", "--json", str(tiny)],
                dont_write,
            ),
            ("wheel install", "`ibdtool --help`", [*ibd, "--help"], dont_write),
        ]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--before", type=Path, help="a checkout of the code before, for comparison")
    ap.add_argument(
        "--anchor",
        type=Path,
        help="an older checkout measured on an earlier day: the machine's own drift since",
    )
    ap.add_argument(
        "--also-python",
        help="another interpreter (another venv: how ibdtool is installed there) for the "
        "`python -c pass`, inspect and checksum rows of this tree",
    )
    ap.add_argument(
        "--no-pyc",
        action="store_true",
        help="also a copy of this tree without .pyc, run under PYTHONDONTWRITEBYTECODE=1",
    )
    ap.add_argument("--installed", help="an interpreter with ibdtool installed from the wheel")
    ap.add_argument(
        "--script",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="an installed console script (e.g. a fresh clone's .venv/bin/ibdtool), run as is",
    )
    ap.add_argument(
        "--no-finder",
        action="store_true",
        help="also this tree under python -S, the venv's site-packages on PYTHONPATH",
    )
    args = ap.parse_args()
    tiny = tiny_file()
    with_cfg = REPO / "samples" / "mariadb" / "p4k-plain.ibd"
    trees = {"now": REPO}
    if args.before:
        trees = {"before": args.before.resolve(), **trees}
    if args.anchor:
        trees = {"anchor": args.anchor.resolve(), **trees}
    py = sys.executable
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    rows: list[tuple[str, str, list[str], dict[str, str]]] = [
        ("", "`python -c pass`", [py, "-c", "pass"], base_env),
    ]
    if args.also_python:
        other = args.also_python
        rows.append(("", f"`python -c pass` ({other})", [other, "-c", "pass"], base_env))
    for label, tree in trees.items():
        _compile(tree)
        env = {**base_env, "PYTHONPATH": str(tree)}
        ibd = [py, "-m", "ibdtool.cli"]
        if args.also_python and label == "now":
            rows += [
                (
                    f"now ({other})",
                    "`ibdtool inspect --json tiny.ibd`",
                    [other, "-m", "ibdtool.cli", "inspect", "--json", str(tiny)],
                    env,
                ),
                (
                    f"now ({other})",
                    "`ibdtool checksum tiny.ibd`",
                    [other, "-m", "ibdtool.cli", "checksum", str(tiny)],
                    env,
                ),
            ]
        rows += [
            (
                label,
                "`ibdtool inspect --json tiny.ibd`",
                [*ibd, "inspect", "--json", str(tiny)],
                env,
            ),
            (
                label,
                "`ibdtool inspect --json p4k-plain.ibd` (.cfg beside)",
                [*ibd, "inspect", "--json", str(with_cfg)],
                env,
            ),
            (label, "`ibdtool checksum tiny.ibd`", [*ibd, "checksum", str(tiny)], env),
            (label, "`ibdtool --help`", [*ibd, "--help"], env),
        ]
    if args.no_finder:
        site_dir = sysconfig.get_paths()["purelib"]
        env = {**base_env, "PYTHONPATH": f"{REPO}{os.pathsep}{site_dir}"}
        bare = [py, "-S", "-m", "ibdtool.cli"]
        rows += [
            ("", "`python -S -c pass`", [py, "-S", "-c", "pass"], base_env),
            (
                "now, no finder",
                "`ibdtool inspect --json tiny.ibd`",
                [*bare, "inspect", "--json", str(tiny)],
                env,
            ),
            ("now, no finder", "`ibdtool --help`", [*bare, "--help"], env),
        ]
    for spec in args.script:
        label, _, script = spec.partition("=")
        rows += [
            (
                f"{label}, installed",
                "`ibdtool inspect --json tiny.ibd`",
                [script, "inspect", "--json", str(tiny)],
                base_env,
            ),
            (
                f"{label}, installed",
                "`ibdtool checksum tiny.ibd`",
                [script, "checksum", str(tiny)],
                base_env,
            ),
            (f"{label}, installed", "`ibdtool --help`", [script, "--help"], base_env),
        ]
    rows += _pyc_rows(args.no_pyc, args.installed, tiny, base_env)
    load = os.getloadavg()
    walls: list[list[float]] = [[] for _ in rows]
    cpus: list[list[float]] = [[] for _ in rows]
    for _ in range(args.runs):
        for i, (_label, _name, cmd, env) in enumerate(rows):
            w, c = _once(cmd, env)
            walls[i].append(w)
            cpus[i].append(c)
    load_after = os.getloadavg()
    pths = Path(sysconfig.get_paths()["purelib"]).glob("__editable__.ibdtool-*.pth")
    finder = any(p.read_text().startswith("import") for p in pths)
    site = (
        "its site runs the editable install's finder, which imports pathlib: about 8 ms of the "
        "`python -c pass` row"
        if finder
        else "its editable install a path entry: scripts/editable_path.py"
    )
    lines = [
        f"{args.runs} interleaved runs of each; load average {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f} before, {load_after[0]:.2f} after. `python` is the venv's ({site}).",
        "",
        "| code | command | wall min ms | wall median ms | CPU min ms | CPU median ms |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for i, (label, name, _cmd, _env) in enumerate(rows):
        w, c = walls[i], cpus[i]
        lines.append(
            f"| {label} | {name} | {min(w) * 1000:.0f} | {statistics.median(w) * 1000:.0f} | "
            f"{min(c) * 1000:.0f} | {statistics.median(c) * 1000:.0f} |"
        )
    now = next(i for i, r in enumerate(rows) if r[0] == "now")
    lines += [
        "",
        f"- start-up now: {min(walls[now]) * 1000:.0f} ms wall at best, "
        f"{min(cpus[now]) * 1000:.0f} ms CPU at best (goal ≤ 60 ms): "
        f"{'met' if min(walls[now]) <= 0.060 else '**not met**'}",
        "",
        "Command: `PYTHONPATH=$PWD .venv/bin/python bench/bench_startup.py"
        + (" --before DIR" if args.before else "")
        + (" --anchor DIR" if args.anchor else "")
        + (" --also-python PY" if args.also_python else "")
        + (" --no-pyc" if args.no_pyc else "")
        + (" --installed PY" if args.installed else "")
        + (" --no-finder" if args.no_finder else "")
        + "".join(f" --script {spec.partition('=')[0]}=PATH" for spec in args.script)
        + "`",
    ]
    body = "\n".join(lines)
    title = "Start-up: inspect --json of a tiny file, checksum, --help"
    if args.no_pyc or args.installed:  # a section of its own: issue 24's compiled or not
        title = "Start-up with and without .pyc under PYTHONDONTWRITEBYTECODE"
    append_results(title, body)
    print(body)


if __name__ == "__main__":
    main()
