"""Old spellings of renamed options: still accepted for a while, each saying so on stderr.

A renamed option keeps its old spelling as a hidden option (:func:`deprecated_option`) whose
use prints one warning line naming the new spelling; the command then reads the value as if
the new one had been given. The renames and why are listed in docs/cli.md ("Options, one
meaning each").
"""

from __future__ import annotations

from typing import Any

import click


def warn_deprecated(old: str, new: str) -> None:
    """One line on stderr: ``old`` still works, ``new`` is the spelling to use."""
    click.echo(f"ibdtool: [Warning] {old} is deprecated and will be removed; use {new}", err=True)


def deprecated_option(old: str, new: str, dest: str, **attrs: Any) -> Any:
    """A hidden option ``old`` that warns (naming ``new``) when given and stores into ``dest``."""

    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value:
            warn_deprecated(old, new)
        return value

    return click.option(old, dest, hidden=True, callback=callback, expose_value=True, **attrs)
