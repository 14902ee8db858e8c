"""Issue 15 item 4: do repeated `simulate` runs agree on what each codec costs and on the
cheapest one?

Run by hand:  .venv/bin/python bench/bench_cost.py [FILE] [--runs N] [--baseline TREE]
FILE defaults to samples/mariadb/p16k-plain.ibd. ``--baseline`` runs another checkout's
`simulate --json` the same way (its tree first on PYTHONPATH), e.g. one from before the change,
for the same table.

For every real (not what-if) codec: its CPU per page (compress + decompress, the JSON's
``_us_per_page`` figures) in each run, and how far apart the runs were (slowest / fastest
run); then the "cheapest within 5 points" each run advised at the file's block size, and how
sure it said it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from common import REPO, append_results

DEFAULT = REPO / "samples" / "mariadb" / "p16k-plain.ibd"


def run(tree: Path, path: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [sys.executable, "-m", "ibdtool.cli", "simulate", "--json", str(path)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    doc: dict[str, Any] = json.loads(out)
    return doc


def label(x: dict[str, Any]) -> str:
    level = f":{x['level']}" if x["level"] is not None else ""
    return f"{x['server']}:{x['algorithm']}{level}"


def summarise(name: str, docs: list[dict[str, Any]]) -> list[str]:
    block = docs[0]["fs_block_size"]
    per: dict[str, list[float]] = {}
    for doc in docs:
        for r in doc["results"]:
            if r["server"] == "what-if" or r["block_size"] != block or r["ntfs_unit"]:
                continue
            total = (r["compress_us_per_page"] or 0) + (r["decompress_us_per_page"] or 0)
            per.setdefault(label(r), []).append(total)
    lines = [
        f"**{name}**, {len(docs)} runs, {block // 1024}K blocks: CPU µs per page "
        "(compress + decompress) in each run",
        "",
        "| codec | runs | slowest / fastest run |",
        "|---|---|---:|",
    ]
    for codec, xs in per.items():
        runs = ", ".join(f"{x:.0f}" for x in xs)
        lines.append(f"| {codec} | {runs} | {max(xs) / min(xs):.2f}× |")
    advice = []
    for doc in docs:
        (rec,) = [
            r for r in doc["recommendations"] if r["block_size"] == block and not r["ntfs_unit"]
        ]
        pick = rec["cheapest"] or rec["best"]
        sure = rec.get("cost_certainty")
        advice.append(label(pick) + (f" ({sure})" if sure else ""))
    distinct = len({a.split(" ")[0] for a in advice})
    lines += ["", f"Cheapest advised: {'; '.join(advice)} — {distinct} different answer(s).", ""]
    return lines


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = sys.argv[1:]
    runs = int(opts[opts.index("--runs") + 1]) if "--runs" in opts else 5
    baseline = Path(opts[opts.index("--baseline") + 1]) if "--baseline" in opts else None
    path = Path(args[0]).resolve() if args and Path(args[0]).exists() else DEFAULT
    lines = [f"File: `{path.relative_to(REPO) if path.is_relative_to(REPO) else path}`.", ""]
    trees = [("this tree", REPO)]
    if baseline is not None:
        head = subprocess.run(
            ["git", "-C", str(baseline), "log", "-1", "--format=%h"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        trees.append((f"baseline {head}", baseline))
    for name, tree in trees:
        lines += summarise(name, [run(tree, path) for _ in range(runs)])
    cmd = f"`.venv/bin/python bench/bench_cost.py {' '.join(sys.argv[1:])}`".replace(" `", "`")
    lines.append(f"Command: {cmd}")
    body = "\n".join(lines)
    print(body)
    append_results("simulate: CPU cost figures between identical runs", body)


if __name__ == "__main__":
    main()
