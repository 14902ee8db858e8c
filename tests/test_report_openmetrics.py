"""``report --format openmetrics``: gauges a real parser of the format reads back.

Oracles: ``prometheus_client``'s OpenMetrics parser (strict: ``# EOF``, one TYPE per family,
escaped labels) and its Prometheus text parser (what node_exporter's textfile collector speaks)
both read the output; each file's logical and allocated bytes are its ``os.stat`` (st_size,
st_blocks × 512), per schema their sums; a file of junk is one ``…_error 1`` sample; a name
with a quote and a backslash comes back as it was.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict
from pathlib import Path

from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families as prometheus_families

from tests.cli_runner import run_ibdtool
from tests.conftest import corpus_file


def _samples(text: str, parser: object) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for fam in parser(text):  # type: ignore[operator]
        assert fam.type == "gauge", fam.name
        for s in fam.samples:
            out[s.name].append((dict(s.labels), s.value))
    return out


def _tree(tmp_path: Path) -> Path:
    """Two schemas of real files, a file whose name needs escaping, and one of junk."""
    root = tmp_path / "datadir"
    maria = "mariadb-10.11/p16k-"
    for schema, names in (
        ("shop", [f"{maria}pc_zlib-1000rows.ibd", f"{maria}plain-1000rows.ibd"]),
        ("logs", ["mysql-made/mysql8015-t_plain_1k.ibd", f"{maria}rc_kbs8-1000rows.ibd"]),
    ):
        (root / schema).mkdir(parents=True)
        for name in names:
            src = corpus_file(name)
            shutil.copyfile(src, root / schema / src.name)
            if src.with_suffix(".cfg").is_file():
                shutil.copyfile(
                    src.with_suffix(".cfg"), root / schema / src.with_suffix(".cfg").name
                )
    odd = root / "shop" / 'we"ird\\name.ibd'
    shutil.copyfile(corpus_file("mariadb-10.11/p16k-pc_lz4-1000rows.ibd"), odd)
    (root / "logs" / "junk.ibd").write_bytes(b"\x07" * 70000)
    return root


def test_openmetrics_parses_and_matches_stat(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    res = run_ibdtool("report", "--format", "openmetrics", "-j", "1", root)
    assert res.returncode == 2, res.stderr  # the junk file: exit 2, its error on stderr
    text = res.stdout
    assert text.endswith("# EOF\n")
    strict = _samples(text, openmetrics_families)
    loose = _samples(text, prometheus_families)
    assert strict == loose
    files = sorted(p for p in root.rglob("*.ibd"))
    logical = {lb["path"]: v for lb, v in strict["ibdtool_tablespace_logical_bytes"]}
    allocated = {lb["path"]: v for lb, v in strict["ibdtool_tablespace_allocated_bytes"]}
    readable = [p for p in files if p.name != "junk.ibd"]
    assert sorted(logical) == sorted(str(p) for p in readable)  # the odd name came back whole
    per_schema: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for p in files:  # a schema's sums count every file, the unreadable one too
        st = os.stat(p)
        if p in readable:
            assert logical[str(p)] == st.st_size
            assert allocated[str(p)] == st.st_blocks * 512
        per_schema[p.parent.name][0] += st.st_size
        per_schema[p.parent.name][1] += st.st_blocks * 512
    for schema, (lsum, asum) in per_schema.items():
        (lv,) = [v for lb, v in strict["ibdtool_schema_logical_bytes"] if lb["schema"] == schema]
        (av,) = [v for lb, v in strict["ibdtool_schema_allocated_bytes"] if lb["schema"] == schema]
        assert (lv, av) == (lsum, asum), schema
    errors = {lb["path"]: v for lb, v in strict["ibdtool_tablespace_error"]}
    assert errors == {str(p): float(p.name == "junk.ibd") for p in files}
    saved = {lb["path"]: v for lb, v in strict["ibdtool_tablespace_saved_bytes"]}
    assert all(saved[k] == logical[k] - allocated[k] for k in logical)
    for name in ("extents", "unpunched_pages", "bad_pages", "pages", "compressed_pages"):
        assert len(strict[f"ibdtool_tablespace_{name}"]) == len(readable), name
        assert {lb["schema"] for lb, _ in strict[f"ibdtool_schema_{name}"]} == {"shop", "logs"}
    ((_, n_files),) = strict["ibdtool_report_files"]
    assert n_files == len(files)
    ((_, n_err),) = strict["ibdtool_report_errors"]
    assert n_err == 1


def test_openmetrics_carries_the_simulation(tmp_path: Path) -> None:
    src = corpus_file("mariadb-10.11/p16k-plain-1000rows.ibd")
    args = ["report", "-j", "1", "--simulate", "--sample", "16", src]
    doc = json.loads(run_ibdtool(*args, "--format", "json").stdout)
    res = run_ibdtool(*args, "--format", "openmetrics")
    assert res.returncode == 0, res.stderr
    got = _samples(res.stdout, openmetrics_families)
    sim = doc["tablespaces"][0]["simulation"]
    ((_, predicted),) = got["ibdtool_tablespace_predicted_allocated_bytes"]
    ((_, saving),) = got["ibdtool_tablespace_predicted_saved_bytes"]
    assert (predicted, saving) == (sim["predicted_allocated"], sim["saving"])
    assert predicted < src.stat().st_size  # a plain file: page compression would save
