"""The ``ibdtool`` command line and everything that prints: the one layer that uses click and Rich.

:mod:`ibdtool.cli.main` holds the command group and the file commands; the other commands live
in their own modules (``server``, ``copy``, ``report``, ``tui``), imported only when run. The
writers (``render``, ``render_plain``, ``report_formats``, ``server_display``) turn engine
results into terminal output. Nothing outside this package imports it (an import-linter
contract in ``pyproject.toml``).

Start-up (issue 14): loading the ~150 modules of ``inspect --json`` creates enough objects for
about 20 of the cyclic collector's young-generation passes (its threshold is 700 new objects),
~2–3 ms of a ~60 ms start; the threshold is raised to 20,000 here, before anything else loads
(the console script and ``python -m ibdtool.cli`` both import this package first). Cyclic
garbage is still collected, in fewer, larger passes; nothing the commands print depends on it
(bench/RESULTS.md, "Issue 14: start-up without construct").

Once the command line is loaded, what loading it made (~20,000 objects: click, the standard
modules, ours, all kept to the end) is frozen (:func:`gc.freeze`): no later pass walks it again,
nor the full collection Python runs at exit, which took ~5 ms of every start (issue 24, item 4).
Objects made after this are collected as before; garbage cycles left by the imports themselves
(a few hundred objects) stay until exit.
"""

import gc

gc.set_threshold(20_000, *gc.get_threshold()[1:])

from ibdtool.cli.main import main  # noqa: E402

gc.freeze()  # what the imports made lives to the end: no collection walks it again

__all__ = ["main"]
