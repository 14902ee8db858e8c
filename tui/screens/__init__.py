"""Screens of the ibdtool TUI, one per module: browser, tablespace, page, simulation, log, help."""
