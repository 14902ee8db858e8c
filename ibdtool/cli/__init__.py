"""The ``ibdtool`` command line and everything that prints: the one layer that uses click and Rich.

:mod:`ibdtool.cli.main` holds the command group and the file commands; the other commands live
in their own modules (``server``, ``copy``, ``report``, ``tui``), imported only when run. The
writers (``render``, ``render_plain``, ``report_formats``, ``server_display``) turn engine
results into terminal output. Nothing outside this package imports it (an import-linter
contract in ``pyproject.toml``).
"""

from ibdtool.cli.main import main

__all__ = ["main"]
