"""Batch reports over whole data directories and hosts: the engine of ``ibdtool report``.

- ``batch``: find the tablespaces, scan them, flag, total and compare.
- ``saved``: the shape of a saved report (``--format json``/``jsonl``), declared once.
- ``remote``: the scan of other hosts (``host:path``), run by the copy agent over ssh.

Uses :mod:`ibdtool.tablespace`, :mod:`ibdtool.advise`, :mod:`ibdtool.copy` and
:mod:`ibdtool.fs`. New here: report formats that are data (the printed ones go in ``cli/``).
"""
