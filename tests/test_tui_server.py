"""The server view against real throwaway servers: a conversion started from the TUI.

The pilot lists the server's tables, picks a table and a target, reads the plan, confirms with
``y`` and waits for the run. What was shown is checked (the tables' sizes, the statements, the
live progress, the result) and so is what happened, by the server itself: SHOW CREATE TABLE, a
new space id, the same rows (a CRC of every row), the global put back, the file on disk.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from textual.widgets import DataTable, OptionList, RichLog

from ibdtool.present.text import human_bytes
from ibdtool.tui.app import create_app
from ibdtool.tui.screens.migration import MigrationScreen
from ibdtool.tui.screens.server import COLUMNS as SERVER_COLUMNS
from ibdtool.tui.screens.server import ServerScreen
from ibdtool.tui.screens.targets import TargetScreen
from samples.servers import ThrowawayServer
from tests.server_fixtures import (
    assert_format,
    create_table_sql,
    global_var,
    make_table,
    on_disk,
    rows_crc,
    space_id,
)
from tests.test_migrate_load import dirty_in_pool
from tests.tui_helpers import assert_columns_fit, settle, static_text, table_rows

SIZE = (140, 40)


def server_app(srv: ThrowawayServer) -> Any:
    from ibdtool.server import resolve_options

    opts = resolve_options(
        {"socket": str(srv.socket), "user": "root"}, no_defaults=True, environ={}
    )
    return create_app(server=(opts, None))


def file_size(srv: ThrowawayServer, schema: str, table: str) -> int:
    view = "INNODB_TABLESPACES" if srv.flavor == "mysql" else "INNODB_SYS_TABLESPACES"
    rows = srv.query(
        f"SELECT FILE_SIZE FROM information_schema.{view} WHERE NAME = %s", (f"{schema}/{table}",)
    )
    return int(rows[0][0])


async def convert(pilot: Any, name: str, target: str) -> MigrationScreen:
    """From the server view: cursor to ``name``, ``m``, pick ``target``, read the plan."""
    app = pilot.app
    screen = app.screen
    assert isinstance(screen, ServerScreen)
    table = screen.query_one(DataTable)
    row = table.get_row_index(name)
    while table.cursor_row != row:
        await pilot.press("down" if table.cursor_row < row else "up")
    await pilot.press("m")
    await pilot.pause()
    assert isinstance(app.screen, TargetScreen)
    options = app.screen.query_one(OptionList)
    index = next(
        i for i in range(options.option_count) if options.get_option_at_index(i).id == target
    )
    while options.highlighted != index:
        await pilot.press("down")
    await pilot.press("enter")
    await settle(pilot)
    migration = app.screen
    assert isinstance(migration, MigrationScreen)
    return migration


async def run_and_check(
    pilot: Any,
    srv: ThrowawayServer,
    migration: MigrationScreen,
    schema: str,
    table: str,
    key: str = "f",
) -> list[str]:
    """``f`` (run, verify under FLUSH … FOR EXPORT: MariaDB's idle page cleaner would leave
    the new file unwritten), wait for the end; the progress shown, the result line; the log."""
    await pilot.press(key)
    await settle(pilot)
    assert migration.results is not None, "the run did not end"
    (result,) = migration.results
    assert result.status == "done", result
    assert result.verified is True
    # progress was shown while the statement ran: the bar moved and lines were logged
    assert migration.progress_seen, "no progress event reached the screen"
    assert any(0 < f < 1 for f in migration.progress_seen), migration.progress_seen
    log = [line.text for line in migration.query_one(RichLog).lines]
    assert any("elapsed, ETA" in line for line in log), log
    assert any(f"{schema}.{table} → " in line and ": done" in line for line in log), log
    status = static_text(migration.query_one("#migration-status"))
    assert "finished" in status
    return log


def logged_sql(app: Any) -> list[Any]:
    return [e for e in app.command_log.entries() if e.kind == "sql"]


@pytest.mark.asyncio
@pytest.mark.xdist_group("mariadb")
async def test_convert_on_mariadb_from_the_tui(mariadb: ThrowawayServer) -> None:
    make_table(mariadb, "tui", "orders", rows=20000, doublings=3)
    rows = rows_crc(mariadb, "tui", "orders")
    space_before = space_id(mariadb, "tui", "orders")
    algorithm_before = global_var(mariadb, "innodb_compression_algorithm")
    app = server_app(mariadb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ServerScreen)
        by_name = {r[0]: r for r in table_rows(screen.query_one(DataTable))}
        assert by_name["tui.orders"][1] == human_bytes(file_size(mariadb, "tui", "orders"))
        assert by_name["tui.orders"][4] == "none"
        assert "MariaDB 10.11" in static_text(screen.query_one("#server-info"))
        migration = await convert(pilot, "tui.orders", "page:lz4")
        plan = static_text(migration.query_one("#plan-text"))
        assert "SET GLOBAL innodb_compression_algorithm = 'lz4'" in plan
        assert "ALTER TABLE `tui`.`orders` PAGE_COMPRESSED=1, FORCE, ALGORITHM=INPLACE" in plan
        # nothing ran before y: the server still has the old table
        assert space_id(mariadb, "tui", "orders") == space_before
        await run_and_check(pilot, mariadb, migration, "tui", "orders")
        alter = [e for e in logged_sql(app) if "ALTER TABLE `tui`.`orders`" in e.text]
        assert alter and alter[0].seconds > 0 and alter[0].outcome == "ok"
        results = [e for e in app.command_log.entries() if e.kind == "result"]
        assert any("tui.orders → page:lz4: done" in e.text for e in results)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ServerScreen)
        by_name = {r[0]: r for r in table_rows(app.screen.query_one(DataTable))}
        assert by_name["tui.orders"][4] == "page:lz4"
    # what the server says happened
    assert re.search(r"`?PAGE_COMPRESSED`?='?1'?", create_table_sql(mariadb, "tui", "orders"))
    assert space_id(mariadb, "tui", "orders") != space_before  # rebuilt
    assert rows_crc(mariadb, "tui", "orders") == rows
    assert global_var(mariadb, "innodb_compression_algorithm") == algorithm_before
    assert_format(on_disk(mariadb, "tui", "orders"), "page:lz4")


@pytest.mark.asyncio
@pytest.mark.xdist_group("mysql80")
async def test_convert_on_mysql80_from_the_tui(mysql80: ThrowawayServer) -> None:
    make_table(mysql80, "tui", "orders", rows=20000, doublings=3)
    rows = rows_crc(mysql80, "tui", "orders")
    space_before = space_id(mysql80, "tui", "orders")
    app = server_app(mysql80)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ServerScreen)
        assert "MySQL 8.0.15" in static_text(screen.query_one("#server-info"))
        by_name = {r[0]: r for r in table_rows(screen.query_one(DataTable))}
        assert by_name["tui.orders"][1] == human_bytes(file_size(mysql80, "tui", "orders"))
        migration = await convert(pilot, "tui.orders", "page:zlib")
        plan = static_text(migration.query_one("#plan-text"))
        assert "COMPRESSION='zlib'" in plan and "OPTIMIZE TABLE `tui`.`orders`" in plan
        await run_and_check(pilot, mysql80, migration, "tui", "orders", key="y")
        statements = " ".join(e.text for e in logged_sql(app))
        assert "OPTIMIZE TABLE `tui`.`orders`" in statements
    assert "COMPRESSION='zlib'" in create_table_sql(mysql80, "tui", "orders")
    assert space_id(mysql80, "tui", "orders") != space_before
    assert rows_crc(mysql80, "tui", "orders") == rows
    assert_format(on_disk(mysql80, "tui", "orders"), "page:zlib")


@pytest.mark.asyncio
@pytest.mark.xdist_group("mariadb")
async def test_page_map_names_indexes_from_the_server(mariadb: ThrowawayServer) -> None:
    """A MariaDB file has no SDI, and no .cfg once the export lock is released: the page map's
    index names can only come from the server's INNODB_SYS_INDEXES."""
    from ibdtool.tui.screens.tablespace import TablespaceScreen

    make_table(mariadb, "tui", "named", rows=3000)
    sid = space_id(mariadb, "tui", "named")
    mariadb.query("FLUSH TABLES tui.named FOR EXPORT")  # pages on disk (the .cfg goes at unlock)
    mariadb.query("UNLOCK TABLES")
    path = mariadb.file_path("tui", "named")
    assert not path.with_suffix(".cfg").exists()
    catalog = {
        int(i): str(n)
        for i, n in mariadb.query(
            "SELECT INDEX_ID, NAME FROM information_schema.INNODB_SYS_INDEXES WHERE SPACE = %s",
            (sid,),
        )
    }
    app = server_app(mariadb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        # the tables' widths come with the rows: drawn again from the columns as the screen's
        # mount makes them (label wide), every column is checked before anything else runs
        assert isinstance(app.screen, ServerScreen)
        table.clear(columns=True)
        for name in SERVER_COLUMNS:
            table.add_column(name, key=name)
        app.screen.rebuild()
        assert_columns_fit(table)
        row = table.get_row_index("tui.named")
        while table.cursor_row != row:
            await pilot.press("down" if table.cursor_row < row else "up")
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TablespaceScreen) and screen.model is not None
        assert screen.model.index_names == catalog
        await pilot.press("slash", *"idx_customer", "enter")
        assert screen._match is not None and any(screen._match)


@pytest.mark.asyncio
@pytest.mark.xdist_group("mariadb")
async def test_a_run_in_the_tui_ends_verified_without_a_lock(mariadb: ThrowawayServer) -> None:
    """``y`` (no lock): MariaDB's idle page cleaner would leave the new file's pages in the
    buffer pool; the run nudges it (said in the log, put back after), waits for them and ends
    verified. The server's own count (INNODB_BUFFER_PAGE, asked by the test) agrees."""
    make_table(mariadb, "tui", "idle", rows=3000)
    (lwm,) = mariadb.query("SELECT @@GLOBAL.innodb_max_dirty_pages_pct_lwm")[0]
    app = server_app(mariadb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        migration = await convert(pilot, "tui.idle", "page:zlib")
        await pilot.press("y")
        await settle(pilot)
        assert migration.results is not None, "the run did not end"
        (result,) = migration.results
        assert dirty_in_pool(mariadb, "tui", "idle") == 0  # the server's own count
        assert result.status == "done" and result.verified is True, result
        assert mariadb.query("SELECT @@GLOBAL.innodb_max_dirty_pages_pct_lwm")[0][0] == lwm
        # the log as one text (its lines are wrapped at the widget's width)
        log = "".join(line.text for line in migration.query_one(RichLog).lines)
        log = re.sub(r"\s+", "", log)

        def shown(text: str) -> bool:
            return re.sub(r"\s+", "", text) in log

        assert shown("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0.001"), log
        assert shown("data pages are zlib"), log
        assert "failed" not in log.lower() and "FOREXPORT" not in log, log
