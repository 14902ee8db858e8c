"""Make the README's screenshots of ``ibdtool tui`` (SVG, exported by Textual), by hand.

    .venv/bin/python docs/tui_screenshots.py [--server SOCKET]

Runs the app headless at 120×34 over ``samples/`` (and the MariaDB system tablespace of
``samples/system``, unpacked to a temporary folder) and writes ``docs/tui-*.svg``. With
``--server``, also converts a table on the throwaway server listening on SOCKET (as root, no
password) and saves the migration view: start one with ``samples.servers.mariadb_server``; the
second table it lists is converted to ``page:lz4`` (make it big enough to show progress, e.g.
``tests.server_fixtures.make_table(srv, "shop", "orders", rows=20000, doublings=3)``).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ibdtool.tui.app import create_app  # noqa: E402

DOCS = REPO / "docs"
SIZE = (120, 34)


async def settle(pilot: Any) -> None:
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
    await pilot.pause(0.2)


async def shoot(app: Any, name: str, steps: Callable[[Any], Awaitable[None]] | None = None) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        if steps is not None:
            await steps(pilot)
            await settle(pilot)
        path = DOCS / f"tui-{name}.svg"
        path.write_text(app.export_screenshot(title=f"ibdtool tui — {name}"))
        print(path)


def keys(*pressed: str) -> Callable[[Any], Awaitable[None]]:
    async def run(pilot: Any) -> None:
        for key in pressed:
            await pilot.press(key)
            await settle(pilot)

    return run


async def main(socket: str | None) -> None:
    os.chdir(REPO)
    await shoot(create_app("samples"), "browser", keys("down", "down", "down"))
    with tempfile.TemporaryDirectory() as tmp:
        ibdata = Path(tmp) / "ibdata1"
        ibdata.write_bytes(
            gzip.decompress((REPO / "samples/system/mariadb-ibdata1.gz").read_bytes())
        )
        os.chdir(tmp)
        await shoot(create_app("ibdata1"), "tablespace", keys("right", "right", "right"))
        os.chdir(REPO)
    mixed = "samples/mysql80/mixed_zlib_lz4.ibd"
    await shoot(create_app(mixed), "compression", keys("2", "right", "right", "right", "right"))
    await shoot(create_app(mixed), "page", keys(*["right"] * 4, "enter"))
    # the cursor on mariadb lz4: the line above the table shows its CPU spread
    simulate = keys("s", *["down"] * 5)
    await shoot(create_app("samples/mysql80/plain.ibd"), "simulate", simulate)
    if socket:
        from ibdtool.server import resolve_options

        opts = resolve_options({"socket": socket, "user": "root"}, no_defaults=True, environ={})

        async def migrate(pilot: Any) -> None:
            for key in ("down", "m", "down", "enter"):
                await pilot.press(key)
                await settle(pilot)
            await pilot.press("y")
            await settle(pilot)

        await shoot(create_app(server=(opts, None)), "migrate", migrate)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", metavar="SOCKET", help="a throwaway server's socket")
    asyncio.run(main(parser.parse_args().server))
