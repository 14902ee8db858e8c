"""Widgets of the ibdtool TUI, one per module."""
