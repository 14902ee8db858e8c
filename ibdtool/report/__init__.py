"""Batch reports over whole data directories and hosts: the engine of ``ibdtool report``.

- ``batch``: find the tablespaces, scan them, flag, total and compare.
- ``saved``: the shape of a saved report (``--format json``/``jsonl``), declared once.
- ``rowstore``: a report's rows kept small (packed) until they are printed in order.
- ``remote``: the scan of other hosts (``host:path``), run by the copy agent over ssh.

Uses :mod:`ibdtool.tablespace`, :mod:`ibdtool.advise`, :mod:`ibdtool.copy` and
:mod:`ibdtool.fs`. New here: report formats that are data (the printed ones go in ``cli/``).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ibdtool.report.batch import (
        COSTLY_SAVING_PCT,
        DEFAULT_SAMPLE,
        FLAGS,
        FRAGMENTED_EXTENTS_PER_GIB,
        FRAGMENTED_MIN_EXTENTS,
        SLOW_DROP_SECONDS,
        Comparer,
        Scanner,
        ScanOptions,
        Target,
        Totals,
        discover,
        document,
        fail_on_hits,
        fulltext_owners,
        load_report,
        match_keys,
        scan_one,
        sort_key,
        thresholds,
        tie_fulltext,
        walk_targets,
    )
    from ibdtool.report.remote import parse_hosts, scan_fleet
    from ibdtool.report.rowstore import RowStore
else:
    from ibdtool.exports import lazy

    __getattr__, __dir__ = lazy(
        __name__,
        {
            "batch": (
                "COSTLY_SAVING_PCT Comparer DEFAULT_SAMPLE FLAGS FRAGMENTED_EXTENTS_PER_GIB "
                "FRAGMENTED_MIN_EXTENTS SLOW_DROP_SECONDS "
                "ScanOptions Scanner Target Totals discover document fail_on_hits fulltext_owners "
                "load_report "
                "match_keys scan_one sort_key thresholds tie_fulltext walk_targets"
            ),
            "remote": "parse_hosts scan_fleet",
            "rowstore": "RowStore",
        },
    )
