"""The ibdtool engine: files, filesystems and servers, returning data (no Rich, no click).

Depends on :mod:`ibdtool.parsers`; :mod:`ibdtool.cli` (the command line, the one layer with click
and Rich) and :mod:`ibdtool.tui` sit on top. The engine is grouped by what it does, one subpackage
each, whose ``__init__`` maps it and offers what the others use (docs/layout.md):

- ``fs``: opening what ibdtool reads, creating what it writes, what the filesystem stores.
- ``tablespace``: reading and scanning one tablespace (inspect, pages, page, checksum,
  records, the SDI), with the fast paths beside the code they shadow.
- ``advise``: simulation and advice.
- ``copy``: copying and re-punching, locally and over ssh.
- ``report``: batch reports over data directories and hosts.
- ``server``: live servers; **a new server dialect** is one file in ``server/dialects/``.
- ``present``: words and pictures for every front end (no Rich).
- ``cli``: the command line; **a new CLI command** is one module there, registered in
  ``cli/main.py``.

Shared by all: ``errors`` (errors and exit codes), ``workers`` (forked worker processes),
``exports`` (the groups' lazy offers).
"""
