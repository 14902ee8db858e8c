"""The ibdtool engine: files, filesystems and servers, returning data (no Rich, no click).

Depends on :mod:`parsers`; :mod:`ibdtool.cli` (the command line, the one layer with click and
Rich) and :mod:`tui` sit on top. Module map, and where a new thing goes:

- Reading: ``openfile`` (regular files only), ``tablespace`` (pages of one file, lazily),
  ``allocation`` (st_blocks, SEEK_DATA/SEEK_HOLE, FIEMAP), ``inspect``, ``pagerows``,
  ``checkscan`` (``checksum``), ``records``, ``forkscan`` and ``workpool`` (worker processes).
- What-ifs: ``simulate``, ``recommend``.
- Moving files: ``sparsecopy`` (local; ``copycheck``: its page check, on the read-back),
  ``remote_copy`` + ``copy_agent`` (over ssh), ``repunch``.
- Reports: ``report``, ``report_schema``.
- Words for every front end: ``text``, ``describe``; pictures: ``pagemap`` (a page map's
  categories, cells, SVG) and ``palette`` (the colours every picture and the TUI draw pages
  in); errors and exit codes: ``errors``.
- Live servers: ``server/`` (its docstring maps it); **a new server dialect** is one file in
  ``server/dialects/``.
- **A new CLI command** is one module in ``cli/`` registered in ``cli/main.py``.
"""
