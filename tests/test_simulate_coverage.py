"""The printed 95% intervals of a sampled simulation hold the exact answer about 95% of the time.

A sampled run's figure is the pages a rebuild writes times their mean cost, each factor from a
sample: the plan's count from a sample of leaves (:mod:`ibdtool.advise.rebuild`), the mean from
a sample of the rebuilt pages compressed. The two are independent, so their half widths are
combined in quadrature (:func:`ibdtool.advise.simulate._rebuilt_total`), not bound to bound.
The second computation is the exact answer: ``full`` (every leaf read, every rebuilt page
compressed). Over many seeds on real files of the corpus and samples/, the sampling interval
(the rebuild model's own error, which a full scan shares, taken out) must hold it about 95% of
the time: not much less (too narrow), and not every time (padded).
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from ibdtool.advise import simulate as sim
from ibdtool.advise.rebuild import RebuiltImage, plan_rebuild
from ibdtool.tablespace import Tablespace
from tests.catalog import CORPUS, REPO

#: real files whose indexes have a few dozen to a hundred leaves (MySQL 5.6 to 8.0.15,
#: MariaDB 10.11 at 16K and 4K pages)
FILES = [
    CORPUS / "innodb-java-reader/mysql80/pk/tb24_sk.ibd",
    CORPUS / "mysql-made/mysql8015-t_plain_1k.ibd",
    CORPUS / "mysql-made/mysql5722-t_zlib_1k.ibd",
    CORPUS / "mariadb-10.11/p16k-crc32_pc_zlib-1000rows.ibd",
    REPO / "samples/mariadb/p4k-plain.ibd",
]
SEEDS = range(1, 26)
SCENARIOS = ["mariadb:zlib", "mariadb:lz4", "mariadb:bzip2", "zstd:1"]


def coverage(files: list[Path]) -> tuple[int, int, int]:
    """(figures, held by the sampling interval, held by the printed one) over ``SEEDS``: the
    plan from half of the leaves, a third of the rebuilt pages compressed."""
    scenarios = sim.parse_algorithms(SCENARIOS)
    kw = {"costs": False, "row_compressed": False, "jobs": 1}
    figures = held = held_printed = 0
    for path in files:
        with Tablespace(path) as ts:
            exact = plan_rebuild(ts, sample_above=None)
        leaves = sum(len(p.leaf.pages) for p in exact.indexes)
        full = sim.simulate_path(path, scenarios, full=True, **kw)  # type: ignore[arg-type]
        assert full.full
        truth = {(r.scenario, r.block): r.predicted for r in full.results}
        for seed in SEEDS:
            runs = []
            for model in (False, True):
                with pytest.MonkeyPatch.context() as mp:
                    if not model:  # the sampling interval alone
                        mp.setattr(RebuiltImage, "model_pages", property(lambda self: 0))
                    runs.append(
                        sim.simulate_path(
                            path,
                            scenarios,
                            sample=max(8, exact.data_pages // 3),
                            seed=seed,
                            plan_sample_above=0,
                            plan_sample_leaves=max(4, leaves // 2),
                            plan_target=None,
                            **kw,  # type: ignore[arg-type]
                        )
                    )
            alone, printed = runs
            assert alone.rebuild is not None and "leaf pages sampled" in alone.notes[0]
            for a, p in zip(alone.results, printed.results, strict=True):
                want = truth[(a.scenario, a.block)]
                assert a.ci95 is not None and p.ci95 is not None
                assert a.predicted == p.predicted  # the model's error widens, never moves
                figures += 1
                held += a.ci95[0] <= want <= a.ci95[1]
                held_printed += p.ci95[0] <= want <= p.ci95[1]
    return figures, held, held_printed


def test_sampled_intervals_cover_the_exact_answer() -> None:
    files = [f for f in FILES if f.exists()]
    if len(files) < 3:
        pytest.skip("the corpus is not here")
    figures, held, held_printed = coverage(files)
    rate = held / figures
    print(f"sampling interval: {held}/{figures} = {rate:.3f}; printed: {held_printed}/{figures}")
    assert figures >= 300, figures
    # 95% intervals: about 95%; the figures of one run share its sample, so allow some spread
    assert 0.90 <= rate <= 0.995, rate
    assert held_printed >= held  # the printed interval holds the model's error too


#: real files of a hundred pages or more (4K pages), and of forty (16K)
CONTROL_FILES = [
    REPO / "samples/mariadb/p4k-plain.ibd",
    CORPUS / "mariadb-10.11/p4k-plain-1000rows.ibd",
    CORPUS / "mysql-made/mysql8015-t_plain_1k.ibd",
    CORPUS / "mariadb-10.11/p16k-crc32_pc_zlib-1000rows.ibd",
]


def test_control_variate_intervals_cover_the_exact_answer() -> None:
    """The default run's slow codecs are estimated from fewer pages of their own with a fast
    codec measured on more (:func:`ibdtool.advise.simulate._controlled`): built here as the
    default run builds it (the fast codecs on a random order's first half, the slow ones on
    its first sixth), its intervals must hold the full scan's figure about 95% of the time,
    and be narrower than the slow codec's own sample's."""
    files = [f for f in CONTROL_FILES if f.exists()]
    if len(files) < 2:
        pytest.skip("the corpus is not here")
    fast = sim.parse_algorithms(["mariadb:zlib", "zstd:1"])
    slow = sim.parse_algorithms(["mariadb:lzma", "mariadb:bzip2"])
    blocks = sim.parse_block_sizes(["1024", "4096"])
    figures = held = narrower = 0
    for path in files:
        with Tablespace(path) as ts:
            n_pages = ts.n_pages
            psize = ts.logical_size
            cfg = sim.SimConfig((*fast, *slow), tuple(blocks), psize, zip_every=0)
            exact = sim.scan_pages(ts, range(n_pages), cfg)  # the second computation
            exact.settle(cfg)
            n1, n2 = n_pages // 2, max(16, n_pages // 6)
            per = {**dict.fromkeys(fast, n1), **dict.fromkeys(slow, n2)}
            for seed in SEEDS:
                order = random.Random(seed).sample(range(n_pages), n_pages)
                acc = sim.Accumulator()
                for who, part in ((cfg.scenarios, order[:n2]), (tuple(fast), order[n2:n1])):
                    pcfg = replace(cfg, scenarios=who, per_page=True)
                    got = sim.scan_pages(ts, sorted(part), pcfg)
                    got.settle(pcfg)
                    acc.merge(got)
                for s in slow:
                    for b in blocks:
                        c = sim._controlled(acc, s, b, per, n_pages, None, psize)
                        if c is None:
                            continue  # no spread on these pages: the plain interval serves
                        total, total_sq = acc.cost[(s, b)]
                        _mean, plain = sim._half_width(total, total_sq, n2, n_pages, psize)
                        half = sim.Z95 * n_pages * c.var**0.5
                        figures += 1
                        held += abs(c.mean * n_pages - exact.cost[(s, b)][0]) <= half
                        narrower += half < plain
    rate = held / figures
    print(f"control variate intervals: {held}/{figures} = {rate:.3f}, narrower {narrower}")
    assert figures >= 150, figures
    assert rate >= 0.90, rate
    assert narrower == figures  # used only where it narrows the interval
    assert held < figures  # not padded
