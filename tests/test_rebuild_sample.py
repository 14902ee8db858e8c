"""The rebuild plan from sampled leaves against the plan that reads every page.

A large file's rebuild is planned from a random sample of each index's leaves
(:func:`ibdtool.advise.rebuild.plan_rebuild` above ``sample_above`` index pages): its count of
pages written comes with a 95% interval. The second computation is the exact plan of the same
file (every leaf read): on the real files of the corpus with the most leaves, the sampled
interval must hold the exact count, for several seeds, and the pages the sampled plan
synthesises must be index pages a scan can read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ibdtool.advise.rebuild import plan_rebuild
from ibdtool.tablespace import Tablespace
from tests.catalog import CORPUS

#: real files with a few dozen leaves (MySQL 5.6 to 8.0.15, MariaDB 10.11), from the catalog
FILES = [
    "innodb-java-reader/mysql80/pk/tb24_sk.ibd",
    "innodb-java-reader/mysql56/pk/tb24_sk.ibd",
    "mysql-made/mysql8015-t_plain_1k.ibd",
    "mysql-made/mysql5722-t_zlib_1k.ibd",
    "mariadb-10.11/p16k-crc32_pc_zlib-1000rows.ibd",
]


@pytest.mark.parametrize("name", FILES)
def test_sampled_interval_holds_the_exact_count(name: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name} is not in the corpus here")
    with Tablespace(path) as ts:
        exact = plan_rebuild(ts, sample_above=None)
        assert exact.written_ci is None and exact.leaves_read is None  # every page read
        for seed in (1, 2, 3, 4, 5):
            sampled = plan_rebuild(ts, sample_above=0, sample_leaves=16, seed=seed, target=None)
            assert sampled.written_ci is not None and sampled.leaves_read is not None
            read, leaves = sampled.leaves_read
            assert read < leaves, sampled.leaves_read  # a sample, not every leaf
            low, high = sampled.written_ci
            assert low <= sampled.data_pages <= high
            assert low <= exact.data_pages <= high, (seed, exact.data_pages, low, high)
            assert sampled.n_pages_ci is not None
            assert sampled.n_pages_ci[0] <= sampled.n_pages <= sampled.n_pages_ci[1]
            # the rebuilt leaves, drawn from the sampled ones, are index pages with records
            leaf = next(i for i, (_x, level, _k) in enumerate(sampled.order) if level == 0)
            page = sampled.page(len(sampled.kept) + leaf)
            assert int.from_bytes(page[24:26], "big") == 17855  # FIL_PAGE_INDEX
            assert int.from_bytes(page[38 + 16 : 38 + 18], "big") > 0  # PAGE_N_RECS


def test_small_file_keeps_the_exact_plan() -> None:
    """Under the threshold the plan reads every page: no interval, as before."""
    path = CORPUS / FILES[0]
    if not path.exists():
        pytest.skip(f"{FILES[0]} is not in the corpus here")
    with Tablespace(Path(path)) as ts:
        default = plan_rebuild(ts)
        exact = plan_rebuild(ts, sample_above=None)
    assert default.written_ci is None
    assert (default.data_pages, default.n_pages) == (exact.data_pages, exact.n_pages)


@pytest.mark.parametrize("name", FILES[:3])
def test_plan_reads_leaves_until_its_target(name: str) -> None:
    """With a target, a first sample too small to meet it is grown: more leaves are read, the
    count of pages written is then known within the target (or every leaf was read), and the
    interval still holds the exact plan's count."""
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name} is not in the corpus here")
    with Tablespace(path) as ts:
        exact = plan_rebuild(ts, sample_above=None)
        for seed in (1, 2, 3):
            first = plan_rebuild(ts, sample_above=0, sample_leaves=8, seed=seed, target=None)
            assert first.leaves_read and first.written_ci
            low, high = first.written_ci
            # a tenth of a page of these files: the first sample misses it (its bounds are
            # whole pages, each index's rounded out)
            target = 0.002
            assert max(first.data_pages - low, high - first.data_pages) >= 1
            grown = plan_rebuild(ts, sample_above=0, sample_leaves=8, seed=seed, target=target)
            assert grown.leaves_read and grown.written_ci
            assert grown.leaves_read[0] > first.leaves_read[0]
            low, high = grown.written_ci
            half = max(grown.data_pages - low, high - grown.data_pages)
            # within the target, give or take the rounding of each index's bounds
            read, leaves = grown.leaves_read
            assert half <= target * grown.data_pages + 2 or read == leaves, (half, target)
            assert low <= exact.data_pages <= high
