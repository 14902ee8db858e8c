"""The small things a DBA tripped over (issue 23, item 13), each against its oracle.

* a bar reused for the next phase of a copy (scan, copy, check) says an ETA, not "done";
* a saving that rounds to zero is "0%", never "-0%";
* a ROW_FORMAT=COMPRESSED file (the catalog: physical page size 8192) is "zip 8K", not "none";
* ``pages --from 10 --to 5`` is an error, not an empty listing with exit 0;
* the SDI's pages carry no index id (an all-ones sentinel): shown as the SDI, not as
  18446744073709551615.
"""

from __future__ import annotations

import io
import json

from rich.console import Console
from rich.progress import Progress

from ibdtool.cli.render import advance, progress_columns
from ibdtool.cli.report_formats import COLUMNS, compression_text
from tests.catalog import load_catalog
from tests.cli_runner import run_ibdtool
from tests.conftest import corpus_file


def test_a_bar_reused_for_the_next_phase_is_not_done() -> None:
    columns = progress_columns(byte_units=True)
    progress = Progress(*columns, console=Console(file=io.StringIO()))
    task = progress.add_task("copy", total=1000, info="", rate=None)
    advance(progress, task, 1000, 1000)  # the scan phase ends
    assert columns[-1].render(progress.tasks[0]).plain == "done"
    advance(progress, task, 10, 1000)  # the copy phase starts over
    assert columns[-1].render(progress.tasks[0]).plain != "done"


def test_a_saving_that_rounds_to_zero_is_not_minus_zero() -> None:
    (saved,) = [c for c in COLUMNS if c[0] == "saving_pct"]
    for pct, text in ((-0.4, "0%"), (0.4, "0%"), (-0.6, "-1%"), (33.68, "34%")):
        assert saved[3]({"saving_pct": pct}) == text, pct


def test_row_format_compressed_is_zip_not_none() -> None:
    entries = {e.rel: e for e in load_catalog()}
    for rel in ("mariadb-10.11/p16k-rc_kbs8-1000rows.ibd", "mysql-made/mysql8015-t_kbs8_1k.ibd"):
        kbs = entries[rel].physical
        assert kbs < entries[rel].logical  # the catalog: a compressed page size
        path = corpus_file(rel)
        res = run_ibdtool("inspect", path)
        assert res.returncode == 0, res.stderr
        (line,) = [ln for ln in res.stdout.splitlines() if ln.startswith("Compression")]
        assert f"zip {kbs // 1024}K" in line and "none" not in line, line
        doc = json.loads(run_ibdtool("report", "--format", "json", "-j", "1", path).stdout)
        assert compression_text(doc["tablespaces"][0]) == f"zip {kbs // 1024}K"


def test_pages_range_backwards_is_an_error() -> None:
    res = run_ibdtool("pages", corpus_file("mysql-made/mysql8015-t_plain_1k.ibd"), "--from",
                      "10", "--to", "5")  # fmt: skip
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "--to 5" in lines[0], res.stderr
    assert res.stdout == ""


def test_sdi_pages_show_the_sdi_not_a_sentinel_id() -> None:
    path = corpus_file("mysql-made/mysql8015-t_plain_1k.ibd")
    res = run_ibdtool("pages", path, "--type", "SDI", "--json")
    assert res.returncode == 0, res.stderr
    docs = [json.loads(ln) for ln in res.stdout.splitlines()]
    assert docs and all(d["index_id"] is None and d["index"] == "SDI" for d in docs)
    text = run_ibdtool("pages", path, "--type", "SDI", "--wide").stdout
    assert str(2**64 - 1) not in text and " SDI " in text
