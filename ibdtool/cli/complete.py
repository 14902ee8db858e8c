"""Shell completion: the scripts ``ibdtool completion bash|zsh|fish`` prints, and the values.

Click's own protocol does the work (the shell calls ``ibdtool`` back with
``_IBDTOOL_COMPLETE=bash_complete`` and the words typed); this module adds what click cannot
know: algorithm names from the codec registry (:mod:`ibdtool.parsers.codecs`), migration targets,
block sizes, and paths narrowed to folders and tablespace files. Light on purpose: it is imported
with the command group, so only ``os`` and click at import time (click's completion module loads
when a shell asks).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

SHELLS = ("bash", "zsh", "fish")
#: the files ``report`` takes from a data directory; what the path arguments offer (a pattern
#: ``re`` compiles at its first use, in completion: not at every start, issue 24 item 4)
TABLESPACE_FILE = r"(\.(ibd|ibu)|^ibdata\d+|^undo_?\d+)$"


def _item(value: str, **kw: Any) -> CompletionItem:
    from click.shell_completion import CompletionItem

    return CompletionItem(value, **kw)


def _matching(values: list[str], incomplete: str) -> list[CompletionItem]:
    return [_item(v) for v in dict.fromkeys(values) if v.startswith(incomplete)]


def algorithm_names() -> list[str]:
    """What ``simulate -a`` takes, from the codec registry: ``all``, bare codecs (every server
    that has it), ``mysql:zlib``, ``mariadb:lzma``, … and the what-if codecs."""
    from ibdtool.parsers import codecs

    mysql, mariadb = codecs.names("mysql"), codecs.names("mariadb")
    what_if = [c.name for c in codecs.vendor_codecs(codecs.WHAT_IF)]
    return [
        "all",
        "row",
        *sorted(set(mysql) | set(mariadb)),
        *what_if,
        *(f"mysql:{c}" for c in mysql),
        *(f"mariadb:{c}" for c in mariadb),
    ]


def migrate_targets() -> list[str]:
    """What ``migrate --to`` takes: ``page:<codec>``, ``row:<KEY_BLOCK_SIZE>``, ``none``."""
    from ibdtool.parsers import codecs

    page = dict.fromkeys([*codecs.names("mysql"), *codecs.names("mariadb")])
    return [*(f"page:{c}" for c in page), *(f"row:{k}" for k in (1, 2, 4, 8, 16)), "none"]


BLOCK_SIZES = ("all", "512", "1k", "2k", "4k", "8k", "16k", "64k", "ntfs:512", "ntfs:1k",
               "ntfs:2k", "ntfs:4k")  # fmt: skip


def complete_algorithms(ctx: Any, param: Any, incomplete: str) -> list[CompletionItem]:
    return _matching(algorithm_names(), incomplete)


def complete_targets(ctx: Any, param: Any, incomplete: str) -> list[CompletionItem]:
    return _matching(migrate_targets(), incomplete)


def complete_block_sizes(ctx: Any, param: Any, incomplete: str) -> list[CompletionItem]:
    return _matching(list(BLOCK_SIZES), incomplete)


def tablespace_paths(incomplete: str) -> list[CompletionItem]:
    """Folders (``name/``) and tablespace files under the folder ``incomplete`` names."""
    folder, prefix = os.path.split(incomplete)
    try:
        entries = sorted(os.scandir(folder or "."), key=lambda e: e.name)
    except OSError:
        return []
    items: list[CompletionItem] = []
    for entry in entries:
        if not entry.name.startswith(prefix) or (entry.name[0] == "." and not prefix):
            continue
        path = os.path.join(folder, entry.name)
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_dir:
            items.append(_item(path + "/", type="plain"))
        elif re.search(TABLESPACE_FILE, entry.name):
            items.append(_item(path, type="plain"))
    return items


class TablespacePath(click.Path):
    """A path argument that completes to folders and tablespace files only."""

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return tablespace_paths(incomplete)


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the completion script for SHELL (bash, zsh or fish).

    \b
    bash:  eval "$(ibdtool completion bash)"     (in ~/.bashrc)
    zsh:   eval "$(ibdtool completion zsh)"      (in ~/.zshrc)
    fish:  ibdtool completion fish > ~/.config/fish/completions/ibdtool.fish
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    assert cls is not None  # the Choice allows only shells click knows
    # the script completes the group this command runs under (ibdtool.cli.main's)
    click.echo(cls(ctx.find_root().command, {}, "ibdtool", "_IBDTOOL_COMPLETE").source())
