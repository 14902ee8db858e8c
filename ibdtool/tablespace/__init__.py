"""Reading and scanning one tablespace: the engine of ``inspect``, ``pages``, ``page``,
``checksum``, ``records`` and ``--sdi``.

- ``reader``: open one tablespace file and yield a page's header record per page, lazily.
- ``decrypt``: an encrypted tablespace's key, proved, and its pages decrypted.
- ``inspect``: summarise a whole tablespace; ``inspect_tally`` is its fast path beside it
  (the common pages tallied straight from their stored bytes); ``zip_fill``: the rebuilt fill
  of a ROW_FORMAT=COMPRESSED file's leaf pages (loaded for such files alone).
- ``header_pages``: every page's header record at scan speed, for the scans that want them
  (offered as ``scan_page_headers``: the submodule's own name is taken by the module).
- ``parallel``: split a scan of one tablespace over forked child processes.
- ``checksum``: ``ibdtool checksum``, every page verified.
- ``page_dump``: one page's stored and decompressed bytes and every decoded field.
- ``page_rows``: ``ibdtool pages``, one flat row per page; ``pages_json``: its ``--json``
  lines at scan speed.
- ``records``: the user records of one index, in key order; ``record_blocks``: the same split
  over cores, in order; ``record_export``: those rows as a file a server loads back (CSV,
  TSV, SQL).
- ``index_names``: index names for a tablespace's index ids; ``schemas``: table definitions
  the user gives (``--schema``).
- ``sys_tables``: table ids by name from a system tablespace's SYS_TABLES (MariaDB, MySQL 5.x).

Uses :mod:`ibdtool.fs` and :mod:`ibdtool.workers`.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ibdtool.tablespace.checksum import (
        CheckResult,
        ChecksumTally,
        check_file,
        check_result,
        scan_range,
    )
    from ibdtool.tablespace.header_pages import scan_page_headers
    from ibdtool.tablespace.index_names import MAX_CFG_BYTES, IndexNames, cfg_path, from_rows
    from ibdtool.tablespace.inspect import (
        PARALLEL_MIN_PAGES,
        InspectResult,
        format_name,
        index_names_of,
        inspect_path,
        inspect_tablespace,
        summarise_sdi,
    )
    from ibdtool.tablespace.page_dump import (
        PageDump,
        dump_json,
        dump_name,
        dump_page,
        hex_lines,
        save_page,
        text_lines,
        zip_fill_text,
    )
    from ibdtool.tablespace.page_rows import read_page_rows
    from ibdtool.tablespace.page_tally import unpunched_bytes
    from ibdtool.tablespace.pages_json import json_lines
    from ibdtool.tablespace.parallel import map_ranges
    from ibdtool.tablespace.reader import CHUNK_BYTES, RUN_PAGES, FileSource, Tablespace
    from ibdtool.tablespace.record_blocks import Block, read_blocks
    from ibdtool.tablespace.record_export import (
        EXPORT_FORMATS,
        export_header,
        export_row,
        load_data_sql,
        page_writer,
        row_writer,
        sql_inserts,
        sql_statements,
        tuple_writer,
    )
    from ibdtool.tablespace.records import (
        FastRows,
        RecordEvent,
        definition_from_sdi,
        open_records,
    )
    from ibdtool.tablespace.schemas import Schemas, load_schemas
    from ibdtool.tablespace.sys_tables import sys_table_ids
else:
    from ibdtool.exports import lazy

    __getattr__, __dir__ = lazy(
        __name__,
        {
            "checksum": "CheckResult ChecksumTally check_file check_result scan_range",
            "header_pages": "scan_page_headers",
            "index_names": "IndexNames MAX_CFG_BYTES cfg_path from_rows",
            "inspect": (
                "InspectResult PARALLEL_MIN_PAGES format_name index_names_of inspect_path "
                "inspect_tablespace summarise_sdi"
            ),
            "page_dump": (
                "PageDump dump_json dump_name dump_page hex_lines save_page text_lines "
                "zip_fill_text"
            ),
            "page_rows": "read_page_rows",
            "page_tally": "unpunched_bytes",
            "pages_json": "json_lines",
            "parallel": "map_ranges",
            "reader": "CHUNK_BYTES FileSource RUN_PAGES Tablespace",
            "record_blocks": "Block read_blocks",
            "record_export": (
                "EXPORT_FORMATS export_header export_row load_data_sql page_writer row_writer "
                "sql_inserts sql_statements tuple_writer"
            ),
            "records": "FastRows RecordEvent definition_from_sdi open_records",
            "schemas": "Schemas load_schemas",
            "sys_tables": "sys_table_ids",
        },
    )
