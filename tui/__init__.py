"""The ibdtool terminal UI (Textual): browser, tablespace page map, page bytes, simulation.

Depends on the engine (:mod:`ibdtool`) and never decodes bytes itself. Start it with
``ibdtool tui [PATH]`` or :func:`ibdtool.tui.app.create_app` (which the tests use too).

Module map: ``app`` (the app and its bindings), ``screens/`` (one view a module: browser,
tablespace, page, simulation, server, migration, command log, help, prompts), ``widgets/``
(page map, legend, hex dump, bar chart), ``pagemodel`` (what the page map draws),
``messages`` (worker → UI), ``commandlog``. **A new view** is one module in ``screens/``
pushed from ``app`` or another screen, its keys listed in its ``BINDINGS`` (the help screen
reads them). Colours for codecs come from the codec registry, never a hand list.
"""

# installed as ibdtool.tui (docs/layout.md, "Installed names"); a checkout's root on sys.path
# would also let `import tui` load every module a second time, under names no install has
if __name__ != "ibdtool.tui":
    raise ImportError(f"import ibdtool.tui, not {__name__} (tui/ is installed under ibdtool)")
