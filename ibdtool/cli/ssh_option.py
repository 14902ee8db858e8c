"""The ``--rsh`` / ``--ssh-option`` / ``--remote-python`` options, declared once for the commands
that reach other hosts over ssh (``copy`` and ``report host:path``).

The decorated command receives ``rsh``, ``ssh_option`` and ``remote_python`` as click gives
them; :meth:`ibdtool.copy.remote.SshConfig.from_cli` turns them into the ssh command line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def ssh_options(prefix: str = "") -> Callable[[F], F]:
    """The three ssh options; ``prefix`` starts each help text (e.g. ``"host:path: "``)."""

    def decorate(fn: F) -> F:
        for option in reversed(
            [
                click.option(
                    "--rsh",
                    "-e",
                    metavar="COMMAND",
                    help=f"{prefix}the ssh command to run (default: $IBDTOOL_SSH, else ssh), "
                    "e.g. 'ssh -F conf'.",
                ),
                click.option(
                    "--ssh-option",
                    "-o",
                    multiple=True,
                    metavar="OPTION",
                    help="Passed to ssh as -o OPTION. Unless given here, ibdtool adds "
                    "ServerAliveInterval=15 and ServerAliveCountMax=4: a host silent for a "
                    "minute is dropped.",
                ),
                click.option(
                    "--remote-python",
                    metavar="PATH",
                    help=f"{prefix}the remote interpreter [python3].",
                ),
            ]
        ):
            fn = option(fn)
        return fn

    return decorate
