"""simulate's CPU cost per page: repeated, summarised as median and spread, and advice that
says how sure it is (``ibdtool/advise/cpu_cost.py``, ``ibdtool/advise/recommend.py``).

No assertion here rests on how fast anything ran, except where the codecs are an order of
magnitude apart (zlib level 9 against lz4): the figures are checked against a second
computation from the JSON's own samples, the wording against figures built by hand, and the
budget arithmetic against a clock that ticks a fixed step.
"""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any

import pytest

from ibdtool.advise import cpu_cost as cost_mod
from ibdtool.advise.cpu_cost import (
    MAX_PAGES,
    MAX_REPETITIONS,
    MIN_PAGES,
    MIN_REPETITIONS,
    Cost,
    measure,
)
from ibdtool.advise.recommend import Recommendation, recommendations
from ibdtool.advise.simulate import BlockSpec, Scenario, ScenarioResult, SimResult, simulate_path
from ibdtool.present.describe import recommendation_text
from tests.cli_runner import run_ibdtool
from tests.samples_manifest import manifest, sample

PLAIN = "mariadb/p16k-plain.ibd"
#: stored page types every server compresses: not FSP_HDR (8), XDES (9), R-tree, or type 0
PLAIN_SOMEWHERE = {"0", "8", "9", str(0x45BE)}


def _at(xs: list[float], frac: float) -> float:
    """The value a fraction of the way through the sorted runs, interpolated linearly
    (position ``frac * (n - 1)``: 0 the fastest, 1 the slowest)."""
    s = sorted(xs)
    pos = frac * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _check_cost(c: dict[str, Any], samples: list[float], reps: int) -> None:
    assert len(samples) == reps
    for key, frac in (("min_us", 0), ("q1_us", 0.25), ("median_us", 0.5), ("q3_us", 0.75)):
        assert c[key] == pytest.approx(_at(samples, frac), abs=0.0011), key
    assert c["max_us"] == pytest.approx(max(samples), abs=0.0011)


def test_json_medians_and_spreads_follow_from_the_raw_samples() -> None:
    proc = run_ibdtool(
        "simulate", "--json", "-a", "mariadb:lz4,mariadb:zlib:9,mariadb:snappy,zstd:1",
        "-b", "4k,1k", sample(PLAIN), cwd=None, check=True,
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    run = doc["cost"]
    assert run["clock"] == "thread CPU time"
    reps = run["repetitions"]
    assert MIN_REPETITIONS <= reps <= MAX_REPETITIONS
    types = manifest()[PLAIN]["header_scan"]["stored_page_types"]
    eligible = sum(n for t, n in types.items() if t not in PLAIN_SOMEWHERE)
    assert MIN_PAGES <= run["pages"] <= min(eligible, MAX_PAGES)
    by_scenario: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in doc["results"]:
        for kind in ("compress", "decompress"):
            c = r[f"{kind}_cost"]
            _check_cost(c, c["samples_us"], reps)
            # the plain figure is the median, rounded as before
            assert r[f"{kind}_us_per_page"] == pytest.approx(c["median_us"], abs=0.051)
        key = (r["server"], r["algorithm"], r["level"])
        # one measurement per algorithm, the same at every block size
        assert by_scenario.setdefault(key, r)["compress_cost"] == r["compress_cost"]
    for rec in doc["recommendations"]:
        for x in [rec["best"], *([rec["cheapest"]] if rec["cheapest"] else []), *rec["cost_ties"]]:
            r = by_scenario[(x["server"], x["algorithm"], x["level"])]
            # compress + decompress within each repetition
            pairs = zip(
                r["compress_cost"]["samples_us"], r["decompress_cost"]["samples_us"], strict=True
            )
            total = [a + b for a, b in pairs]
            assert x["cost"]["samples_us"] == pytest.approx(total, abs=0.0011)
            _check_cost(x["cost"], total, reps)


def test_text_and_csv_carry_median_and_spread() -> None:
    args = ["-a", "mariadb:lz4,mysql:zlib", "-b", "4k", sample(PLAIN)]
    text = run_ibdtool("simulate", "--wide", *args, cwd=None, check=True).stdout
    assert "compress µs/page" in text and "decompress µs/page" in text
    assert "runs on" in text and "(thread CPU time), spread q1–q3" in text
    rows = [line for line in text.splitlines() if line.lstrip().startswith(("mariadb", "mysql"))]
    assert len(rows) == 2 and all(line.count("–") == 2 for line in rows)
    out = run_ibdtool("simulate", "--csv", *args, cwd=None, check=True).stdout
    for row in csv.DictReader(io.StringIO(out)):
        for kind in ("compress", "decompress"):
            lo, mid, hi = (
                float(row[f"{kind}_us_q1"]),
                float(row[f"{kind}_us_per_page"]),
                float(row[f"{kind}_us_q3"]),
            )
            assert lo - 0.05 <= mid <= hi + 0.05


# --- the advice's certainty, from figures built by hand ---------------------------------------

BLOCK = BlockSpec(4096)


def _row(
    algo: str, saving: float, comp: tuple[float, ...], dec: tuple[float, ...]
) -> ScenarioResult:
    server = "what-if" if algo == "zstd" else "mariadb"
    level = 1 if algo == "zstd" else None
    return ScenarioResult(
        Scenario(server, algo, level),  # type: ignore[arg-type]
        BLOCK,
        predicted=round(16384 * 100 * (1 - saving / 100)),
        ci95=None,
        saving_pct=saving,
        compress=Cost(comp),
        decompress=Cost(dec),
    )


def _sim(*rows: ScenarioResult) -> SimResult:
    return SimResult(
        path="x.ibd", pages=100, pages_sampled=100, page_size=16384,
        allocated_size=16384 * 100, logical_size=16384 * 100, fs_block_size=4096, full=True,
        seed=1, results=list(rows), row_compressed=[], current={}, notes=[],
        cost_pages=20, cost_repetitions=3,
    )  # fmt: skip


def _advice(*rows: ScenarioResult) -> tuple[Recommendation, str]:
    (rec,) = recommendations(_sim(*rows))
    return rec, "".join(text for text, _style in recommendation_text(rec, 16384))


ZLIB = ("zlib", 52.0, (300.0, 310.0, 320.0), (50.0, 50.0, 50.0))


def test_cheapest_clear_of_every_other_spread_is_clearly() -> None:
    """lz4 costs 12, 14, 16 a page in all (10/12/14 + 2): q1–q3 13–15; snappy 23.5–24.5."""
    lz4 = _row("lz4", 50.0, (10.0, 12.0, 14.0), (2.0, 2.0, 2.0))
    snappy = _row("snappy", 49.0, (20.0, 21.0, 22.0), (3.0, 3.0, 3.0))
    rec, text = _advice(_row(*ZLIB), lz4, snappy)
    assert rec.cheapest is lz4 and rec.certainty == "clear" and rec.ties == ()
    assert "mariadb lz4 is the cheapest in CPU within 5 points" in text
    assert "median 14 µs/page, spread 13–15" in text
    assert text.endswith(" — clearly") and "noise" not in text
    doc = rec.to_json()
    assert doc["cost_certainty"] == "clear" and doc["cost_ties"] == []
    assert doc["cheapest"]["cost"]["samples_us"] == [12.0, 14.0, 16.0]


def test_overlapping_spreads_are_within_noise_and_named() -> None:
    """snappy 14–16 (13, 15, 17) overlaps lz4 13–15: either will do, and the text says which."""
    lz4 = _row("lz4", 50.0, (10.0, 12.0, 14.0), (2.0, 2.0, 2.0))
    snappy = _row("snappy", 49.0, (11.0, 13.0, 15.0), (2.0, 2.0, 2.0))
    rec, text = _advice(_row(*ZLIB), lz4, snappy)
    assert rec.cheapest is lz4 and rec.certainty == "within_noise" and rec.ties == (snappy,)
    assert "but mariadb snappy (median 15 µs/page, spread 14–16) is within noise" in text
    assert text.endswith(" — either") and "clearly" not in text
    doc = rec.to_json()
    assert doc["cost_certainty"] == "within_noise"
    assert [(t["algorithm"], t["cost"]["median_us"]) for t in doc["cost_ties"]] == [
        ("snappy", 15.0)
    ]


def test_spreads_that_touch_overlap() -> None:
    lz4 = _row("lz4", 50.0, (10.0, 12.0, 14.0), (2.0, 2.0, 2.0))  # 12, 14, 16: 13–15
    snappy = _row("snappy", 49.0, (12.0, 14.0, 15.0), (2.0, 2.0, 2.0))  # 14, 16, 17: 15–16.5
    rec, _text = _advice(_row(*ZLIB), lz4, snappy)
    assert rec.certainty == "within_noise" and rec.ties == (snappy,)


def test_one_slow_run_does_not_blur_a_clear_ranking() -> None:
    """lz4 12, 12, 13, 13 and one run at 40 (something else had the cache): its min–max
    (12–40) covers snappy's 20–22, its quartiles (12–13) do not."""
    lz4 = _row("lz4", 50.0, (10.0, 10.0, 11.0, 11.0, 38.0), (2.0,) * 5)
    snappy = _row("snappy", 49.0, (17.0, 17.0, 18.0, 18.0, 19.0), (3.0,) * 5)
    rec, text = _advice(_row("zlib", 52.0, (300.0,) * 5, (50.0,) * 5), lz4, snappy)
    assert rec.cheapest is lz4 and rec.certainty == "clear"
    assert "median 13 µs/page, spread 12–13" in text


def test_the_best_saver_can_be_the_cheapest_too() -> None:
    lz4 = _row("lz4", 50.0, (10.0, 11.0, 12.0), (2.0, 2.0, 2.0))
    rec, text = _advice(lz4, _row("snappy", 48.0, (30.0, 31.0, 32.0), (3.0, 3.0, 3.0)))
    assert rec.best is lz4 and rec.cheapest is None and rec.certainty == "clear"
    # its cost is said once, with its saving
    assert "saves most (50%, median 13 µs/page" in text
    assert "it is also the cheapest in CPU within 5 points" in text
    assert text.endswith(" — clearly")


def test_nothing_to_rank_says_nothing_about_certainty() -> None:
    """One candidate within 5 points (zlib saves 52%, lz4 40%), and what-if rows never count."""
    zstd = _row("zstd", 52.0, (1.0, 1.0, 1.0), (1.0, 1.0, 1.0))
    lz4 = _row("lz4", 40.0, (10.0, 12.0, 14.0), (2.0, 2.0, 2.0))
    rec, text = _advice(_row(*ZLIB), lz4, zstd)
    assert rec.cheapest is None and rec.certainty is None and rec.ties == ()
    assert "clearly" not in text and "noise" not in text and "within 5 points" not in text
    # the CPU trade-off is still named: lz4 saves 40% (over 3/4 of 52%) for 14 µs against 360
    assert rec.good_enough is lz4 and "mariadb lz4 saves 40% for 14 µs/page" in text, text


def test_ranking_is_by_median_total_not_by_one_repetition() -> None:
    """snappy's fastest repetition beats every lz4 one, but its median does not."""
    lz4 = _row("lz4", 50.0, (12.0, 12.0, 12.0), (2.0, 2.0, 2.0))  # 14 each
    snappy = _row("snappy", 49.0, (5.0, 30.0, 30.0), (2.0, 2.0, 2.0))  # 7, 32, 32: 19.5–32
    rec, _text = _advice(_row(*ZLIB), lz4, snappy)
    assert rec.cheapest is lz4 and rec.certainty == "clear"


# --- real codecs on a real file ---------------------------------------------------------------


def _ranking(r: SimResult) -> list[str]:
    rows = [x for x in r.results if x.block == BLOCK]
    return [x.scenario.label for x in sorted(rows, key=lambda x: x.cost.median if x.cost else 0)]


def test_repeated_runs_agree_when_the_codecs_are_far_apart() -> None:
    """zlib at level 9 spends about ten times lz4's CPU on a page: two runs must rank them
    the same way, and call it clear."""
    scenarios = [Scenario("mariadb", "zlib", 9), Scenario("mariadb", "lz4")]
    runs = [simulate_path(sample(PLAIN), scenarios, [BLOCK], jobs=1) for _ in range(2)]
    assert _ranking(runs[0]) == _ranking(runs[1]) == ["mariadb:lz4", "mariadb:zlib:9"]
    for r in runs:
        (rec,) = recommendations(r)
        assert rec.best.scenario.algorithm == "zlib"  # it saves more
        assert rec.cheapest is not None and rec.cheapest.scenario.algorithm == "lz4"
        assert rec.certainty == "clear"
        lz4, zlib9 = sorted((x for x in r.results), key=lambda x: x.scenario.algorithm != "lz4")
        assert lz4.cost is not None and zlib9.cost is not None
        assert lz4.cost.q3 < zlib9.cost.q1


def test_report_does_not_time_codecs() -> None:
    """``costs=False`` (what ``report --simulate`` asks): predictions only."""
    r = simulate_path(sample(PLAIN), [Scenario("mariadb", "lz4")], [BLOCK], jobs=1, costs=False)
    assert r.cost_repetitions == 0 and r.results[0].compress is None
    assert r.to_json()["cost"] is None and r.to_json()["results"][0]["compress_cost"] is None


def test_a_file_without_a_page_to_compress_has_no_costs(tmp_path: Any) -> None:
    """Page 0 and zeros: nothing is timed, and the advice ranks nothing."""
    path = tmp_path / "header_only.ibd"
    path.write_bytes(sample(PLAIN).read_bytes()[:16384] + bytes(15 * 16384))
    r = simulate_path(path, [Scenario("mariadb", "lz4"), Scenario("mariadb", "zlib", 6)], [BLOCK])
    assert r.cost_repetitions == 0 and all(x.cost is None for x in r.results)
    assert all(rec.certainty is None for rec in recommendations(r))


# --- the budget, with a clock that ticks a fixed step -----------------------------------------


class Ticking:
    """``time`` for ibdtool.advise.cpu_cost: each call ``step`` ns later."""

    def __init__(self, step: int) -> None:
        self.now, self.step = 0, step

    def thread_time_ns(self) -> int:
        self.now += self.step
        return self.now


def _work(n_pages: int) -> dict[Scenario, tuple[Scenario, list[bytes]]]:
    page = sample(PLAIN).read_bytes()[3 * 16384 : 4 * 16384]
    return {
        s: (s, [page] * n_pages) for s in (Scenario("mariadb", "lz4"), Scenario("mysql", "lz4"))
    }


def test_plan_fits_the_budget() -> None:
    # cheap codecs: every page up to 64, five repetitions
    assert cost_mod.plan(10_000, 30, 300_000_000) == (30, 5)
    assert cost_mod.plan(10_000, 1000, 300_000_000) == (MAX_PAGES, 5)
    # 5 ms a page: 300 ms / (5 × 5 ms) = 12 pages, then 300 / (12 × 5) = 5 repetitions
    assert cost_mod.plan(5_000_000, 30, 300_000_000) == (12, 5)
    # 100 ms a page: never under 4 pages or 3 repetitions, whatever the budget
    assert cost_mod.plan(100_000_000, 30, 300_000_000) == (MIN_PAGES, MIN_REPETITIONS)
    # a file with fewer pages than the minimum: those it has
    assert cost_mod.plan(100_000_000, 2, 300_000_000) == (2, MIN_REPETITIONS)


def test_measure_stops_repeating_when_the_budget_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1 ms tick: the warm-up (two calls a codec, 4 pages) prices a page at 0.5 ms; each
    repetition spends 2 ms a codec. 10 ms allow 4 pages and 3 repetitions (a fourth would
    bring the total to 16 ms); 100 ms allow all 20 pages and 5."""
    monkeypatch.setattr(cost_mod, "time", Ticking(1_000_000))
    tight = measure(_work(20), budget_ns=10_000_000)
    assert tight is not None and (tight.pages, tight.repetitions) == (4, 3)
    # the compress clock read 1 ms apart, over 4 pages: 250 µs a page, every repetition
    assert {c.samples for c in tight.compress.values()} == {(250.0, 250.0, 250.0)}
    monkeypatch.setattr(cost_mod, "time", Ticking(1_000_000))
    roomy = measure(_work(20), budget_ns=100_000_000)
    assert roomy is not None and (roomy.pages, roomy.repetitions) == (20, 5)
    assert {c.samples for c in roomy.decompress.values()} == {(50.0,) * 5}
    assert measure(_work(0)) is None


def test_a_cost_needs_samples() -> None:
    with pytest.raises(ValueError):
        Cost(())
    c = Cost((3.0, 1.0, 2.0, 10.0))  # sorted 1, 2, 3, 10: q1 at 0.75, q3 at 2.25 positions
    assert (c.median, c.low, c.high) == (2.5, 1.0, 10.0)
    assert (c.q1, c.q3) == (1.75, 4.75)
    assert c.overlaps(Cost((4.75,))) and not c.overlaps(Cost((4.8,)))
    one = Cost((7.0,))
    assert (one.q1, one.median, one.q3) == (7.0, 7.0, 7.0)


def test_cost_pages_are_the_ones_every_server_compresses(tmp_path: Any) -> None:
    """On the plain sample: its INDEX, INODE and IBUF_BITMAP pages (the manifest's stored
    types), not page 0 (FSP_HDR) nor the never-written one; a tail of written zeros adds none,
    and a hole of 20,000 pages after them (a full scan's range) does not hide them."""
    from ibdtool.advise.simulate import cost_pages
    from ibdtool.tablespace.reader import Tablespace

    types = manifest()[PLAIN]["header_scan"]["stored_page_types"]
    want = sorted(int(t) for t, n in types.items() if t not in PLAIN_SOMEWHERE for _ in range(n))
    longer = tmp_path / "tail.ibd"
    longer.write_bytes(sample(PLAIN).read_bytes() + bytes(100 * 16384))
    sparse = tmp_path / "sparse.ibd"
    sparse.write_bytes(sample(PLAIN).read_bytes())
    os.truncate(sparse, 20_000 * 16384)
    for path in (sample(PLAIN), longer, sparse):
        with Tablespace(path) as ts:
            pages = cost_pages(ts, range(ts.n_pages))
        assert sorted(int.from_bytes(p[24:26], "big") for p in pages) == want
        assert all(int.from_bytes(p[4:8], "big") != 0 for p in pages)
    with Tablespace(sample(PLAIN)) as ts:  # at most `want`, spread over the pages given
        few = cost_pages(ts, range(ts.n_pages), want=5)
    numbers = [int.from_bytes(p[4:8], "big") for p in few]
    assert len(few) == 5 and numbers == sorted(numbers) and numbers[-1] - numbers[0] >= 10
