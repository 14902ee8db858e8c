"""Reading and scanning one tablespace: the engine of ``inspect``, ``pages``, ``page``,
``checksum``, ``records`` and ``--sdi``.

- ``reader``: open one tablespace file and yield a page's header record per page, lazily.
- ``decrypt``: an encrypted tablespace's key, proved, and its pages decrypted.
- ``inspect``: summarise a whole tablespace; ``inspect_tally`` is its fast path beside it
  (the common pages tallied straight from their stored bytes).
- ``header_pages``: every page's header record at scan speed, for the scans that want them.
- ``parallel``: split a scan of one tablespace over forked child processes.
- ``checksum``: ``ibdtool checksum``, every page verified.
- ``page_dump``: one page's stored and decompressed bytes and every decoded field.
- ``page_rows``: ``ibdtool pages``, one flat row per page; ``pages_json``: its ``--json``
  lines at scan speed.
- ``records``: the user records of one index, in key order.
- ``index_names``: index names for a tablespace's index ids; ``schemas``: table definitions
  the user gives (``--schema``).

Uses :mod:`ibdtool.fs` and :mod:`ibdtool.workers`. New here: record export.
"""
