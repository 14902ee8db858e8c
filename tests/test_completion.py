"""Shell completion through click's own protocol, as bash runs it.

``ibdtool completion bash`` is sourced into a real bash with ``ibdtool`` on ``PATH``, and its
completion function is called with the words typed; each value offered must then be accepted
by the parser that really reads it (``simulate -a``, ``migrate --to``, ``report --format``), and
paths are offered only as folders and tablespace files.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ibdtool.advise.simulate import parse_algorithms, wants_row_compressed
from ibdtool.cli.report import FORMATS
from ibdtool.server import parse_target
from tests.catalog import REPO
from tests.cli_runner import cli_env, run_ibdtool


@pytest.fixture(scope="module")
def shell_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with an ``ibdtool`` that runs this tree (the name the script calls back)."""
    folder = tmp_path_factory.mktemp("bin")
    exe = folder / "ibdtool"
    exe.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m ibdtool.cli "$@"\n')
    exe.chmod(0o755)
    return folder


def complete(shell_bin: Path, line: str, cwd: Path = REPO) -> list[str]:
    """What bash offers after ``line`` (a trailing space starts a new word)."""
    words = line.split() + ([""] if line.endswith(" ") else [])
    script = (
        'eval "$(ibdtool completion bash)"\n'
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        "_ibdtool_completion ibdtool\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = cli_env(PATH=f"{shell_bin}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        ["bash", "--norc", "-c", script], capture_output=True, text=True, env=env, cwd=cwd,
        timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return [v for v in proc.stdout.splitlines() if v]


def test_scripts_for_every_shell_name_the_completion_variable() -> None:
    for shell in ("bash", "zsh", "fish"):
        proc = run_ibdtool("completion", shell)
        assert proc.returncode == 0, proc.stderr
        assert "_IBDTOOL_COMPLETE" in proc.stdout
    bash = run_ibdtool("completion", "bash").stdout
    assert subprocess.run(["bash", "-n"], input=bash, text=True, check=False).returncode == 0
    bad = run_ibdtool("completion", "tcsh")
    assert bad.returncode == 2 and "tcsh" in bad.stderr


def test_algorithms_come_from_the_codec_registry_and_all_parse(shell_bin: Path) -> None:
    offered = complete(shell_bin, "ibdtool simulate -a ")
    for name in offered:
        # raises on a name the parser refuses; "row" is the ROW_FORMAT=COMPRESSED what-if
        assert parse_algorithms([name]) or wants_row_compressed([name]), name
    # FORMATS.md §2–3: MySQL's two codecs, MariaDB's six
    for name in ("mysql:zlib", "mysql:lz4", "zstd"):
        assert name in offered
    for codec in ("zlib", "lz4", "lzo", "lzma", "bzip2", "snappy"):
        assert f"mariadb:{codec}" in offered
    assert complete(shell_bin, "ibdtool simulate -a mariadb:lz") == [
        "mariadb:lz4",
        "mariadb:lzo",
        "mariadb:lzma",
    ]


def test_migration_targets_all_parse(shell_bin: Path) -> None:
    offered = complete(shell_bin, "ibdtool migrate shop.t --to ")
    assert {"none", "page:zlib", "page:lz4", "row:8"} <= set(offered)
    for target in offered:
        parse_target(target)


def test_report_formats(shell_bin: Path) -> None:
    assert complete(shell_bin, "ibdtool report --format ") == list(FORMATS)
    assert complete(shell_bin, "ibdtool report --format js") == ["json", "jsonl"]


def test_paths_are_folders_and_tablespace_files(shell_bin: Path, tmp_path: Path) -> None:
    for name in ("a.ibd", "ibdata1", "undo_001", "t.ibu", "notes.txt", "a.cfg", ".hidden.ibd"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "shop").mkdir()
    offered = complete(shell_bin, "ibdtool inspect ", cwd=tmp_path)
    assert sorted(offered) == ["a.ibd", "ibdata1", "shop/", "t.ibu", "undo_001"]
    assert complete(shell_bin, "ibdtool report s", cwd=tmp_path) == ["shop/"]
    (tmp_path / "shop" / "orders.ibd").write_bytes(b"")
    assert complete(shell_bin, "ibdtool checksum shop/", cwd=tmp_path) == ["shop/orders.ibd"]
