"""The ibdtool terminal UI (Textual): browser, tablespace page map, page bytes, simulation.

Depends on the engine (:mod:`ibdtool`) and never decodes bytes itself. Start it with
``ibdtool tui [PATH]`` or :func:`tui.app.create_app` (which the tests use too).
"""
