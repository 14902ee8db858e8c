"""One way for the tests to run the ``ibdtool`` command line in a child process.

``python -m ibdtool.cli`` with this tree first on ``PYTHONPATH``, from the repository root, its
output captured as text and its exit status left to the test (``check=False``), so a test sees
exactly what a user's shell would. Tests that need a bare environment, another user or a pipe
build on :func:`ibdtool_command` and pass their own ``env``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.catalog import REPO

IBDTOOL = [sys.executable, "-m", "ibdtool.cli"]


def ibdtool_command(
    *args: str | Path, as_user: int | None = None, command: Sequence[str] = IBDTOOL
) -> list[str]:
    """The argv of ``ibdtool ARGS…``; ``as_user`` runs it as that uid and gid (``setpriv``)."""
    cmd = [*command, *map(str, args)]
    if as_user is not None:
        cmd = ["setpriv", f"--reuid={as_user}", f"--regid={as_user}", "--clear-groups", *cmd]
    return cmd


def cli_env(**extra: str) -> dict[str, str]:
    """This process's environment with the tree under test first on ``PYTHONPATH``."""
    return dict(os.environ, PYTHONPATH=str(REPO), **extra)


def run_ibdtool(
    *args: str | Path,
    as_user: int | None = None,
    command: Sequence[str] = IBDTOOL,
    env: dict[str, str] | None = None,
    cwd: Path | None = REPO,
    timeout: float | None = None,
    check: bool = False,
    **kw: Any,
) -> subprocess.CompletedProcess[str]:
    """Run ``ibdtool ARGS…`` to the end; stdout and stderr as text."""
    return subprocess.run(
        ibdtool_command(*args, as_user=as_user, command=command),
        capture_output=True,
        text=True,
        env=cli_env() if env is None else env,
        cwd=cwd,
        timeout=timeout,
        check=check,
        **kw,
    )


def start_ibdtool(
    *args: str | Path, env: dict[str, str], stderr: int = subprocess.PIPE
) -> subprocess.Popen[str]:
    """Start ``ibdtool ARGS…`` in a child (no stdin, stdout a text pipe read line by line) for a
    test that acts while it runs: interrupts it, kills it, reads its events as they come."""
    pipes = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE, "stderr": stderr}
    return subprocess.Popen(
        ibdtool_command(*args), env=env, cwd=REPO, text=True, bufsize=1, **pipes
    )
