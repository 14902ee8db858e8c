"""``ibdtool calibrate``, ``drop-prepare`` and ``free``: what freeing a file's extents costs
here, and a DROP that does not stall.

Only argument handling and output; the work is in :mod:`ibdtool.fs.calibrate` and
:mod:`ibdtool.fs.unlink`.
"""

from __future__ import annotations

import json
import os
import sys

import click

from ibdtool.present import seconds_text, shown

_SETTINGS = {"help_option_names": ["-?", "--help"]}


@click.command(context_settings=_SETTINGS)
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--extents",
    type=click.IntRange(256, 16384),
    default=2048,
    show_default=True,
    help="Extents in the scratch file (16 KiB slots keeping 8 KiB each).",
)
@click.option(
    "--repetitions",
    "-r",
    type=click.IntRange(3, 10),
    default=5,
    show_default=True,
    help="Times the measurement is made.",
)
@click.option("--no-save", is_flag=True, help="Measure and print; keep nothing.")
@click.option("--json", "as_json", is_flag=True, help="The calibration as JSON on stdout.")
def calibrate(directory: str, extents: int, repetitions: int, no_save: bool, as_json: bool) -> None:
    """Measure what freeing an extent costs on DIRECTORY's filesystem.

    Writes a scratch file of a few thousand extents in DIRECTORY (created new, removed at
    once), times its unlink against a plain file's, several times, and records the result
    for this mount in ibdtool's state file, which inspect, report, server tables, simulate
    and migrate then use to predict DROP TABLE times. Run it in the data directory's
    filesystem, at a time the disk is as busy as usual.
    """
    from ibdtool.fs import CalibrationRun, measure_filesystem, save_calibration

    def on_run(run: CalibrationRun) -> None:
        if not as_json:
            click.echo(
                f"  {run.extents:,} extents: unlink {seconds_text(run.punched_s)}, plain file "
                f"{seconds_text(run.plain_s)} -> {1e6 * run.per_extent_s:.1f} µs/extent",
                err=True,
            )

    result = measure_filesystem(directory, extents, repetitions, on_run=on_run)
    saved = None if no_save else save_calibration(result)
    if as_json:
        doc = {**result.to_json(), "spread": round(result.spread, 2), "state_file": None}
        doc["state_file"] = str(saved) if saved else None
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    rate = result.rate()
    us = sorted(1e6 * x for x in result.per_extent_s)
    click.echo(
        f"{shown(result.fstype)} on {shown(result.mount_point)}"
        f" ({'discard' if result.discard else 'no discard'}): "
        f"{1e6 * rate.per_extent:.1f} µs per extent (runs {us[0]:.1f}–{us[-1]:.1f}), "
        f"{seconds_text(rate.base)} per file"
    )
    noisy = "quiet" if result.spread < 1.5 else "noisy" if result.spread < 4 else "very noisy"
    load = f", load average {result.load_average}" if result.load_average is not None else ""
    click.echo(f"disk {noisy}: slowest run {result.spread:.1f}× the fastest{load}")
    click.echo(
        f"a 65,000-extent file (1 GiB page-compressed): "
        f"{seconds_text(rate.base + rate.per_extent * 65000)} "
        f"({seconds_text(rate.per_extent_low * 65000)}–"
        f"{seconds_text(rate.base_high + rate.per_extent_high * 65000)})"
    )
    if saved:
        click.echo(f"saved in {shown(str(saved))}")


@click.command("drop-prepare", context_settings=_SETTINGS)
@click.argument("path", type=click.Path(dir_okay=False))
@click.option(
    "--into",
    type=click.Path(file_okay=False),
    help="Make the link in this directory (same filesystem) instead of beside the file: "
    "needed before DROP DATABASE, which will not remove a schema directory with other files.",
)
@click.option("--json", "as_json", is_flag=True, help="What was done, as JSON on stdout.")
def drop_prepare(path: str, into: str | None, as_json: bool) -> None:
    """Keep a table's file alive past its DROP, so that the DROP does not stall.

    Makes a hard link PATH.ibdtool-drop beside PATH (a table's .ibd): DROP TABLE then only
    removes a name, and the extents are freed later, in small paced steps, by
    `ibdtool free PATH.ibdtool-drop`. Nothing is written to the file.
    """
    from ibdtool.fs import drop_cost, drop_prepare

    done = drop_prepare(path, into)
    cost = None if done.extents is None else drop_cost(done.link, done.extents, done.size)
    if as_json:
        doc = {
            "path": done.path,
            "link": done.link,
            "extents": done.extents,
            "drop_cost_without_link": None if cost is None else cost.to_json(),
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    click.echo(f"linked {shown(done.path)} -> {shown(done.link)}")
    if cost is not None and cost.seconds is not None:
        click.echo(
            f"{cost.extents:,} extents: a DROP would have freed them in "
            f"~{seconds_text(cost.seconds)} ({seconds_text(cost.low)}–{seconds_text(cost.high)}); "
            "now it only removes a name"
        )
    click.echo(f"after the DROP: ibdtool free {shown(done.link)}")


@click.command("free", context_settings=_SETTINGS)
@click.argument("path", type=click.Path(dir_okay=False))
@click.option(
    "--extents",
    "step_extents",
    type=click.IntRange(1, 1 << 20),
    default=256,
    show_default=True,
    help="Extents freed per step at most (each a truncate from the end and an fsync).",
)
@click.option(
    "--pause",
    type=click.FloatRange(0, 3600),
    default=0.2,
    show_default=True,
    help="Seconds to wait after each step.",
)
@click.option(
    "--max-stall",
    type=click.FloatRange(min=0.001),
    help="A step that takes longer than this halves the next step's extents.",
)
@click.option("--max-steps", type=click.IntRange(min=1), help="Stop after N steps (resumable).")
@click.option("--no-ionice", is_flag=True, help="Keep this process's I/O priority.")
@click.option(
    "--any-name", is_flag=True, help="Free a file not named *.ibdtool-drop (the DBA names it)."
)
@click.option("--json", "as_json", is_flag=True, help="A JSON line per step, then a summary.")
def free(
    path: str,
    step_extents: int,
    pause: float,
    max_stall: float | None,
    max_steps: int | None,
    no_ionice: bool,
    any_name: bool,
    as_json: bool,
) -> None:
    """Free a dropped table's file in small paced steps, without a long stall.

    PATH is the link `ibdtool drop-prepare` made, after the DROP: it must have no other name
    and no process may hold it open. It is truncated from the end, at most --extents extents
    a step, each step fsynced (so its discards are paid inside it) and followed by --pause;
    in the idle I/O class. Interrupted or stopped with --max-steps, run it again to go on.
    The longest stall a step caused is reported.
    """
    import time

    from ibdtool.fs import free_in_steps, idle_io

    niced = False if no_ionice else idle_io()
    t0 = time.monotonic()
    steps = 0
    freed = 0
    longest = 0.0
    size = None
    for step in free_in_steps(
        path,
        extents=step_extents,
        pause=pause,
        max_stall=max_stall,
        max_steps=max_steps,
        any_name=any_name,
    ):
        steps += 1
        freed += step.extents
        longest = max(longest, step.stall)
        size = step.size_after
        if as_json:
            rec = {
                "step": step.number,
                "extents": step.extents,
                "size_before": step.size_before,
                "size_after": step.size_after,
                "truncate_s": round(step.truncate_s, 6),
                "fsync_s": round(step.sync_s, 6),
                "stall_s": round(step.stall, 6),
            }
            sys.stdout.write(json.dumps(rec) + "\n")
            sys.stdout.flush()
        else:
            click.echo(
                f"  step {step.number}: {step.extents:,} extents, {step.size_after:,} bytes left, "
                f"stall {seconds_text(step.stall)}",
                err=True,
            )
    elapsed = time.monotonic() - t0
    summary = {
        "path": path,
        "steps": steps,
        "extents": freed,
        "longest_stall_s": round(longest, 6),
        "elapsed_s": round(elapsed, 3),
        "done": size == 0 or (size is None and not os.path.lexists(path)),
        "idle_io": niced,
    }
    if as_json:
        sys.stdout.write(json.dumps({"summary": summary}) + "\n")
        return
    what = "freed and removed" if summary["done"] else "stopped; run again to go on"
    click.echo(
        f"{shown(path)}: {what}: {freed:,} extents in {steps} steps, longest stall "
        f"{seconds_text(longest)}, {seconds_text(elapsed)} in all"
        + ("" if niced else " (I/O priority unchanged)")
    )
