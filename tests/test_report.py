"""``ibdtool report`` over a data directory built from samples/.

Every format is checked against oracles that are not the report: ``stat`` for sizes,
``filefrag`` for extents, MariaDB's ``innochecksum`` for the damaged copy, the samples manifest
for what a sparse copy allocates, how each file was built for its flags and names, and a
separate ``ibdtool inspect --json`` run for the per-file fields the row takes over. Totals are
checked against the sum of the rows, ``--compare`` against a second directory with known
changes, and each exit status.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ibdtool.present.text import human_bytes
from tests.cli_runner import IBDTOOL, run_ibdtool
from tests.conftest import sparse_copy
from tests.samples_manifest import manifest, sample

REPORT = [*IBDTOOL, "report"]
PAGE = 16384
FRAG_TAIL_PAGES = 2200  # every other one written: 1,100 extents, over the 1,024 minimum


@dataclass(frozen=True)
class Entry:
    """One file of the test data directory: where it comes from and what it must report."""

    source: str
    how: str  # sparse | dense | gunzip | corrupt | frag
    schema: str | None
    table: str | None
    kind: str
    flags: frozenset[str] = field(default_factory=frozenset)
    partition: str | None = None


LAYOUT: dict[str, Entry] = {
    "ibdata1": Entry("system/mariadb-ibdata1.gz", "gunzip", None, None, "system"),
    "undo001": Entry("system/mariadb-undo001.gz", "gunzip", None, None, "undo"),
    "mysql.ibd": Entry("mysql80/plain.ibd", "sparse", "mysql", None, "dictionary"),
    "shop/customers.ibd": Entry("mysql80/plain.ibd", "sparse", "shop", "customers", "table"),
    "shop/orders.ibd": Entry("mysql80/zlib.ibd", "sparse", "shop", "orders", "table"),
    "shop/events.ibd": Entry(
        "mysql80/mixed_zlib_lz4.ibd", "sparse", "shop", "events", "table", frozenset({"mixed"})
    ),
    "shop/archive.ibd": Entry(
        "mysql80/attr_only_zlib.ibd",
        "sparse",
        "shop",
        "archive",
        "table",
        frozenset({"needs_rebuild"}),
    ),
    "shop/orders_zip.ibd": Entry("mysql80/kbs8.ibd", "sparse", "shop", "orders_zip", "table"),
    "blog/posts.ibd": Entry("mariadb/p16k-pc_lz4.ibd", "sparse", "blog", "posts", "table"),
    "blog/users.ibd": Entry("mariadb/p16k-plain.ibd", "sparse", "blog", "users", "table"),
    "blog/tags.ibd": Entry("mariadb/p16k-crc32_pc_snappy.ibd", "sparse", "blog", "tags", "table"),
    "blog/dense.ibd": Entry(
        "mariadb/p16k-pc_zlib.ibd",
        "dense",
        "blog",
        "dense",
        "table",
        frozenset({"no_holes", "unpunched"}),
    ),
    "blog/frag.ibd": Entry(
        "mariadb/p16k-pc_zlib.ibd", "frag", "blog", "frag", "table", frozenset({"fragmented"})
    ),
    "legacy/plain.ibd": Entry("mysql57/plain.ibd", "sparse", "legacy", "plain", "table"),
    "legacy/broken.ibd": Entry(
        "mysql57/plain.ibd", "corrupt", "legacy", "broken", "table", frozenset({"checksum"})
    ),
    "legacy/hist#P#p2023.ibd": Entry(
        "mysql57/lz4.ibd", "sparse", "legacy", "hist", "table", partition="p2023"
    ),
    "sales@002deu/leads.ibd": Entry("mysql57/zlib.ibd", "sparse", "sales-eu", "leads", "table"),
}
CORRUPT_PAGE = 3


def _place(entry: Entry, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    src = sample(entry.source)
    if entry.how == "gunzip":
        raw = dst.with_suffix(".raw")
        with gzip.open(src, "rb") as fin, raw.open("wb") as fout:
            shutil.copyfileobj(fin, fout)
        sparse_copy(raw, dst)
        raw.unlink()
    elif entry.how == "dense":
        subprocess.run(["cp", "--sparse=never", str(src), str(dst)], check=True)
    else:
        sparse_copy(src, dst)
    if entry.how == "corrupt":
        with dst.open("r+b") as f:  # flip bytes in the middle of a data page
            f.seek(CORRUPT_PAGE * PAGE + 5000)
            data = bytearray(f.read(16))
            f.seek(CORRUPT_PAGE * PAGE + 5000)
            f.write(bytes(b ^ 0x5A for b in data))
    if entry.how == "frag":
        # a real page-compressed file, extended with never-used pages of which every other
        # one is written (zeros, as InnoDB writes a freshly allocated page) and the rest are
        # holes: each written page is its own extent, as in a file punched page by page
        fd = os.open(dst, os.O_WRONLY)
        try:
            first = os.fstat(fd).st_size // PAGE
            for n in range(first, first + FRAG_TAIL_PAGES, 2):
                os.pwrite(fd, bytes(PAGE), n * PAGE)
            os.ftruncate(fd, (first + FRAG_TAIL_PAGES) * PAGE)
        finally:
            os.close(fd)
    settle(dst)


def settle(path: Path) -> None:
    """Write the file back now. Until writeback, ext4 has not spent the extent-tree block that
    a file of more than 4 extents needs, so st_blocks would grow by 4 KiB under the tests."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def build_datadir(root: Path, layout: dict[str, Entry] = LAYOUT) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, entry in layout.items():
        _place(entry, root / name)
    return root


@pytest.fixture(scope="session")
def datadir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_datadir(tmp_path_factory.mktemp("report") / "datadir")


def run(
    *args: str | Path, user: int | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    proc = run_ibdtool(*args, as_user=user, command=REPORT, cwd=cwd)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def report_json(*args: str | Path) -> dict[str, Any]:
    proc = run(*args, "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


@pytest.fixture(scope="session")
def doc(datadir: Path) -> dict[str, Any]:
    return report_json(datadir)


@pytest.fixture(scope="session")
def inspected(datadir: Path) -> dict[str, dict[str, Any]]:
    """``ibdtool inspect --json`` of every file, run on its own."""
    files = [datadir / name for name in LAYOUT]
    proc = run_ibdtool("inspect", "--json", *files, cwd=None, check=True)
    return {str(Path(d["path"]).relative_to(datadir)): d for d in json.loads(proc.stdout)}


def stat_sizes(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_blocks * 512


def filefrag_extents(path: Path) -> int:
    out = subprocess.run(["filefrag", "-v", str(path)], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if re.match(r"\s*\d+:\s+\d+\.\.", line))


# --- the rows --------------------------------------------------------------------------------


def check_row(row: dict[str, Any], datadir: Path, inspected: dict[str, dict[str, Any]]) -> None:
    """One row against stat, the layout and the file's own ``inspect --json``."""
    name = row["name"]
    entry = LAYOUT[name]
    path = datadir / name
    assert Path(row["path"]).resolve() == path.resolve()
    assert (row["logical_size"], row["allocated_size"]) == stat_sizes(path), name
    assert row["saving"] == row["logical_size"] - row["allocated_size"]
    assert (row["schema"], row["table"], row["kind"], row["partition"]) == (
        entry.schema,
        entry.table,
        entry.kind,
        entry.partition,
    ), name
    assert set(row["flags"]) == entry.flags, (name, row["flags"])
    assert row["error"] is None
    ins = inspected[name]
    for key in (
        "compression", "checksum", "pages", "vendor", "format", "row_format", "key_block_size",
        "page_compression", "extents", "unpunched_pages", "unpunched_bytes", "fs_block_size",
    ):  # fmt: skip
        assert row[key] == ins[key], (name, key)


def test_every_tablespace_is_found_once_with_its_schema_and_table(doc: dict[str, Any]) -> None:
    names = [r["name"] for r in doc["tablespaces"]]
    assert sorted(names) == sorted(LAYOUT)
    assert doc["schema_version"] == 1
    assert doc["options"]["simulate"] is False


def test_rows_match_stat_inspect_and_how_each_file_was_made(
    doc: dict[str, Any], datadir: Path, inspected: dict[str, dict[str, Any]]
) -> None:
    for row in doc["tablespaces"]:
        check_row(row, datadir, inspected)


def test_sparse_copies_allocate_what_the_manifest_measured(
    doc: dict[str, Any], datadir: Path
) -> None:
    """The manifest measured each copy right after ``cp``, before writeback; once written
    back, ext4 adds a block for the extent tree of a file with more than the 4 extents its
    inode holds (one block holds ~340; these files have under 100)."""
    by_name = {r["name"]: r for r in doc["tablespaces"]}
    for name, entry in LAYOUT.items():
        if entry.how == "sparse":
            expected = manifest()[entry.source]["copy"]["allocated_size_after_sparse_cp"]
            extents = filefrag_extents(datadir / name)
            assert extents < 340
            expected += os.statvfs(datadir).f_bsize if extents > 4 else 0
            assert by_name[name]["allocated_size"] == expected, name


def test_flag_oracles_innochecksum_filefrag_and_a_dense_copy(
    doc: dict[str, Any], datadir: Path
) -> None:
    by_name = {r["name"]: r for r in doc["tablespaces"]}
    # MariaDB's innochecksum reads MySQL 5.7 plain files: the original verifies, the copy not
    good = subprocess.run(["innochecksum", str(datadir / "legacy/plain.ibd")], capture_output=True)
    bad = subprocess.run(
        ["innochecksum", str(datadir / "legacy/broken.ibd")], capture_output=True, text=True
    )
    assert good.returncode == 0 and bad.returncode != 0
    assert f"page::{CORRUPT_PAGE} invalid" in bad.stdout + bad.stderr
    assert by_name["legacy/broken.ibd"]["checksum"]["invalid_pages"] == [CORRUPT_PAGE]
    # the kernel's extent list, read by filefrag
    frag = by_name["blog/frag.ibd"]
    assert frag["extents"] == filefrag_extents(datadir / "blog/frag.ibd") >= 1024
    assert frag["extents_per_gib"] > doc["thresholds"]["fragmented_extents_per_gib"]
    # a copy without holes allocates its whole size although its pages are compressed
    dense = by_name["blog/dense.ibd"]
    size, allocated = stat_sizes(datadir / "blog/dense.ibd")
    assert allocated >= size and dense["compressed_pages"] > 0
    # mixed: the generator left two algorithms in this file
    scan = manifest()["mysql80/mixed_zlib_lz4.ibd"]["header_scan"]
    assert len(scan["compressed_pages_by_algorithm"]) == 2
    # needs_rebuild: COMPRESSION='zlib' declared, and only the SDI page rewritten
    archive = by_name["shop/archive.ibd"]
    assert archive["declared_compression"] == "zlib"
    assert archive["compressed_pages"] == 1


def test_totals_are_the_sums_of_the_rows(doc: dict[str, Any]) -> None:
    rows = doc["tablespaces"]
    schemas = {r["schema"] for r in rows}
    by_schema = {t["schema"]: t for t in doc["totals"]["by_schema"]}
    assert set(by_schema) == schemas
    groups = [(doc["totals"]["all"], rows)] + [
        (by_schema[s], [r for r in rows if r["schema"] == s]) for s in schemas
    ]
    for total, members in groups:
        assert total["files"] == len(members)
        for key in ("logical_size", "allocated_size", "pages", "extents", "unpunched_pages"):
            assert total[key] == sum(r[key] or 0 for r in members), key
        assert total["checksum_invalid"] == sum(r["checksum"]["invalid"] for r in members)
        for flag in doc["flags"]:
            assert total["flags"][flag] == sum(flag in r["flags"] for r in members), flag
    assert doc["totals"]["all"]["logical_size"] == sum(stat_sizes(Path(r["path"]))[0] for r in rows)


# --- the other formats -----------------------------------------------------------------------


def test_jsonl_rows_are_the_json_rows(
    doc: dict[str, Any], datadir: Path, inspected: dict[str, dict[str, Any]]
) -> None:
    proc = run(datadir, "--format", "jsonl", "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(lines) == len(LAYOUT)
    for row in lines:
        check_row(row, datadir, inspected)


MANY = 2000  # a scan of seconds, long beside start-up even on a loaded machine


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A schema folder of MANY tables (hard links to one sample: no disk space)."""
    shop = tmp_path_factory.mktemp("many") / "shop"
    shop.mkdir()
    first = shop / "t0000.ibd"
    sparse_copy(sample("mysql80/plain.ibd"), first)
    for i in range(1, MANY):
        os.link(first, shop / f"t{i:04d}.ibd")
    return shop


def test_jsonl_streams_rows_as_files_finish(many_files: Path) -> None:
    """Rows come out while the scan goes on, the first long before the last; a writer that
    collected rows would print them all at once at the end."""
    count = MANY
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    start = time.monotonic()
    proc = subprocess.Popen(
        [*REPORT, str(many_files), "--format", "jsonl", "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    stamps, names = [], []
    for line in proc.stdout:
        stamps.append(time.monotonic())
        names.append(json.loads(line)["name"])
    proc.wait(timeout=300)
    assert proc.returncode == 0
    assert sorted(names) == [f"shop/t{i:04d}.ibd" for i in range(count)]
    # the rows arrived spread over the scan, not in one burst at the end
    assert stamps[-1] - stamps[0] > 0.4 * (stamps[-1] - start), (start, stamps[0], stamps[-1])


def test_csv_matches_stat_and_inspect(datadir: Path, inspected: dict[str, dict[str, Any]]) -> None:
    proc = run(datadir, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    records = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert sorted(r["name"] for r in records) == sorted(LAYOUT)
    for rec in records:
        name = rec["name"]
        size, allocated = stat_sizes(datadir / name)
        assert (int(rec["logical_size"]), int(rec["allocated_size"])) == (size, allocated)
        ins = inspected[name]
        counts = dict(part.split(":") for part in rec["compression"].split(";"))
        assert {k: int(v) for k, v in counts.items()} == ins["compression"]
        assert int(rec["checksum_invalid"]) == ins["checksum"]["invalid"]
        assert set(filter(None, rec["flags"].split(";"))) == LAYOUT[name].flags
        assert rec["schema"] == (LAYOUT[name].schema or "")


def _markdown_table(text: str, heading: str) -> list[list[str]]:
    lines = text.split(f"## {heading}\n\n", 1)[1].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def test_markdown_tables_match_stat(datadir: Path, doc: dict[str, Any]) -> None:
    proc = run(datadir, "--format", "markdown")
    assert proc.returncode == 0, proc.stderr
    rows = _markdown_table(proc.stdout, "Tablespaces")
    assert len(rows) == len(LAYOUT)
    by_label = {r[0]: r for r in rows}
    for name, entry in LAYOUT.items():
        label = (
            name
            if entry.table is None
            else f"{entry.schema or '(server)'}.{entry.table}"
            + (f" partition {entry.partition}" if entry.partition else "")
        )
        cells = by_label[label]
        size, allocated = stat_sizes(datadir / name)
        assert cells[4] == human_bytes(size) and cells[5] == human_bytes(allocated), name
        assert set(filter(None, cells[-1].split(", "))) == entry.flags
    schemas = _markdown_table(proc.stdout, "Schemas")
    assert len(schemas) == len(doc["totals"]["by_schema"])


def test_table_format_lists_every_tablespace_with_its_flags(datadir: Path) -> None:
    proc = run(datadir)  # the default; not a terminal here, so no progress and full width
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    for name, entry in LAYOUT.items():
        label = name if entry.table is None else f"{entry.schema or '(server)'}.{entry.table}"
        line = next(line for line in lines if line.strip().startswith(label))
        for flag in entry.flags:
            assert flag in line, (name, flag)
    assert any(line.startswith(f"{len(LAYOUT)} tablespaces") for line in lines)


# --- exit statuses ---------------------------------------------------------------------------


def test_exit_0_when_no_fail_on_condition_is_found(datadir: Path) -> None:
    proc = run(datadir / "shop", "--format", "json", "--fail-on", "checksum,unpunched")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_exit_1_when_a_fail_on_condition_is_found(datadir: Path) -> None:
    proc = run(datadir / "shop", "--format", "json", "--fail-on", "checksum", "--fail-on", "mixed")
    assert proc.returncode == 1
    assert "1 mixed" in proc.stderr
    assert json.loads(proc.stdout)["totals"]["all"]["flags"]["mixed"] == 1  # still reported
    proc = run(datadir / "legacy/broken.ibd", "--format", "csv", "--fail-on", "any")
    assert proc.returncode == 1


def test_exit_2_on_bad_input(datadir: Path, tmp_path: Path) -> None:
    missing = run(tmp_path / "nope")
    assert missing.returncode == 2
    assert missing.stderr.startswith("ibdtool: error: ") and "nope" in missing.stderr
    (tmp_path / "empty_dir").mkdir()
    assert run(tmp_path / "empty_dir").returncode == 2
    bad_flag = run(datadir / "shop", "--fail-on", "slow")
    assert bad_flag.returncode == 2 and "unknown condition 'slow'" in bad_flag.stderr
    (tmp_path / "old.json").write_text('{"hello": 1}\n')
    bad_old = run(datadir / "shop", "--compare", tmp_path / "old.json")
    assert bad_old.returncode == 2 and "not an ibdtool report" in bad_old.stderr


@pytest.mark.parametrize("fmt", ["table", "jsonl", "csv"])
def test_a_reader_that_goes_away_is_not_a_failure(many_files: Path, fmt: str) -> None:
    """``report | head -1`` in a script: exit 0, not 1 (a --fail-on hit) and no traceback.
    The output is larger than a pipe's buffer, so the writer does meet the closed pipe."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen(
        [*REPORT, str(many_files), "--format", fmt, "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, stderr
    assert "Traceback" not in stderr


@pytest.fixture()
def world_readable_dir() -> Iterator[Path]:
    """A directory an unprivileged user can enter (pytest's own tmp is private to root)."""
    root = Path(tempfile.mkdtemp(prefix="ibdtool-report-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root)


NOBODY = 65534


def test_unreadable_files_are_rows_with_an_error_and_the_scan_goes_on(
    world_readable_dir: Path,
) -> None:
    """Run as ``nobody`` (root reads everything): a file it may not read, a folder it may not
    list, and an empty file. Each is a row with an error; the others are reported; exit 2."""
    if shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is needed to run the report as an unprivileged user")
    root = world_readable_dir
    shop = root / "shop"
    shop.mkdir(mode=0o755)
    sparse_copy(sample("mysql80/zlib.ibd"), shop / "orders.ibd")
    sparse_copy(sample("mysql80/plain.ibd"), shop / "secret.ibd")
    (shop / "empty.ibd").touch()
    private = root / "private"
    private.mkdir()
    sparse_copy(sample("mysql80/plain.ibd"), private / "hidden.ibd")
    for f in (shop / "orders.ibd", shop / "empty.ibd"):
        f.chmod(0o644)
    (shop / "secret.ibd").chmod(0o600)
    private.chmod(0o700)
    for f in (shop / "orders.ibd", shop / "secret.ibd"):
        settle(f)
    proc = run(root, "--format", "json", user=NOBODY, cwd=root)
    assert proc.returncode == 2, proc.stderr
    doc = json.loads(proc.stdout)
    by_name = {r["name"]: r for r in doc["tablespaces"]}
    assert set(by_name) == {"shop/orders.ibd", "shop/secret.ibd", "shop/empty.ibd", "private/"}
    assert by_name["shop/orders.ibd"]["error"] is None
    assert by_name["shop/orders.ibd"]["logical_size"] == (shop / "orders.ibd").stat().st_size
    secret = by_name["shop/secret.ibd"]
    assert secret["error"].endswith("permission denied") and secret["flags"] == ["error"]
    assert (secret["logical_size"], secret["allocated_size"]) == stat_sizes(shop / "secret.ibd")
    assert "empty file" in by_name["shop/empty.ibd"]["error"]
    assert "cannot list directory" in by_name["private/"]["error"]
    assert doc["totals"]["all"]["errors"] == 3
    assert doc["totals"]["all"]["flags"]["error"] == 3
    assert "3 of 4 files could not be read" in proc.stderr
    assert "shop/secret.ibd: permission denied" in proc.stderr


@pytest.mark.parametrize("fmt", ["jsonl", "json", "table"])
def test_one_file_that_cannot_be_read_is_one_line(tmp_path: Path, fmt: str) -> None:
    """Given alone, a file report cannot read is its one error line (no 'N of M' summary)."""
    short = tmp_path / "short.ibd"
    short.write_bytes(bytes(39))
    proc = run(short, "--format", fmt)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"ibdtool: error: {short}: file too small for an InnoDB page 0 (39 bytes)"
    ]


# --- --simulate ------------------------------------------------------------------------------


def test_simulate_predicts_what_the_servers_allocated_for_the_same_rows(datadir: Path) -> None:
    doc = report_json(
        datadir / "blog/users.ibd",
        datadir / "shop/customers.ibd",
        datadir / "shop/orders_zip.ibd",
        datadir / "ibdata1",
        "--simulate",
    )
    by_name = {r["name"]: r for r in doc["tablespaces"]}
    live = {k: v["live"]["allocated_size"] for k, v in manifest().items() if "live" in v}
    # the report predicts the file the conversion's rebuild writes, as `simulate` does (whose
    # predictions tests/test_simulate_rebuild.py holds to real conversions on both servers)
    users = by_name["blog/users.ibd"]["simulation"]
    customers = by_name["shop/customers.ibd"]["simulation"]
    for path, sim in (
        (datadir / "blog/users.ibd", users),
        (datadir / "shop/customers.ibd", customers),
    ):
        assert sim["as_rebuilt"] is True
        alone = sim["rebuild_alone"]
        assert (
            0
            < alone["allocated"]["low"]
            <= alone["allocated"]["value"]
            <= alone["allocated"]["high"]
        )
        one = json.loads(
            run_ibdtool(
                "simulate", "--json", "-a", sim["best"], str(path), cwd=None, check=True
            ).stdout
        )
        (res,) = one["results"]
        low, high = res["ci95"]
        assert low <= sim["predicted_allocated"] <= high, (sim, res)
    # MariaDB plain table: the best of MariaDB's codecs; those its server stored the same rows
    # in most compactly (the samples, loaded, not rebuilt: no more pages than a rebuild's)
    mariadb_best = min(v for k, v in live.items() if k.startswith("mariadb/p16k-pc_"))
    assert users["server"] == "mariadb"
    assert live[f"mariadb/p16k-pc_{users['algorithm']}.ibd"] <= mariadb_best * 1.03
    # MySQL 8 plain table: zlib beat lz4 on the real server
    assert customers["best"].startswith("mysql:zlib")
    assert by_name["shop/orders_zip.ibd"]["simulation"]["predicted_allocated"] is None
    assert "ROW_FORMAT=COMPRESSED" in by_name["shop/orders_zip.ibd"]["simulation"]["note"]
    assert (
        by_name["ibdata1"]["simulation"]["note"] == "system tablespaces cannot be page-compressed"
    )
    sim_total = doc["totals"]["all"]["simulation"]
    assert sim_total["files"] == 2
    assert sim_total["predicted_allocated"] == (
        users["predicted_allocated"] + customers["predicted_allocated"]
    )


# --- --compare -------------------------------------------------------------------------------

CHANGED_LAYOUT = {k: v for k, v in LAYOUT.items() if k != "shop/customers.ibd"}  # dropped
CHANGED_LAYOUT["shop/refunds.ibd"] = Entry("mysql80/lz4.ibd", "sparse", "shop", "refunds", "table")
CHANGED_LAYOUT["shop/orders.ibd"] = Entry("mysql80/plain.ibd", "sparse", "shop", "orders", "table")
CHANGED_LAYOUT["blog/posts.ibd"] = Entry(
    "mariadb/p16k-pc_lz4.ibd",
    "dense",
    "blog",
    "posts",
    "table",
    frozenset({"no_holes", "unpunched"}),
)


@pytest.fixture(scope="session")
def changed_datadir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_datadir(tmp_path_factory.mktemp("report-b") / "datadir", CHANGED_LAYOUT)


def _expected_changes(old: Path, new: Path) -> dict[str, tuple[str, int, int]]:
    """name -> (status, logical delta, allocated delta) from stat of both directories."""
    out = {}
    for name in sorted(set(LAYOUT) | set(CHANGED_LAYOUT)):
        a = stat_sizes(old / name) if name in LAYOUT else (0, 0)
        b = stat_sizes(new / name) if name in CHANGED_LAYOUT else (0, 0)
        status = (
            "added"
            if name not in LAYOUT
            else "dropped"
            if name not in CHANGED_LAYOUT
            else "changed"
            if a != b
            else "unchanged"
        )
        out[name] = (status, b[0] - a[0], b[1] - a[1])
    return out


def test_compare_finds_the_known_changes(
    datadir: Path, changed_datadir: Path, doc: dict[str, Any], tmp_path: Path
) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    new = report_json(changed_datadir, "--compare", old)
    expected = _expected_changes(datadir, changed_datadir)
    want = {n: e for n, e in expected.items() if e[0] != "unchanged"}
    assert set(want) == {
        "shop/customers.ibd",
        "shop/refunds.ibd",
        "shop/orders.ibd",
        "blog/posts.ibd",
    }
    changes = {c["name"]: c for c in new["compare"]["changes"]}
    assert set(changes) == set(want)
    for name, (status, d_logical, d_alloc) in want.items():
        c = changes[name]
        assert c["status"] == status, name
        assert (c["logical_size"]["delta"], c["allocated_size"]["delta"]) == (d_logical, d_alloc)
    assert changes["shop/orders.ibd"]["fields"]["page_compression"] == {
        "old": "zlib",
        "new": "none",
    }
    assert changes["blog/posts.ibd"]["flags_added"] == ["no_holes", "unpunched"]
    summary = new["compare"]["summary"]
    counts = {s: sum(e[0] == s for e in expected.values()) for s in ("added", "dropped")}
    assert (summary["added"], summary["dropped"], summary["changed"]) == (
        counts["added"],
        counts["dropped"],
        2,
    )
    assert summary["unchanged"] == len(LAYOUT) - 1 - 2
    assert summary["allocated_size"]["delta"] == sum(e[2] for e in expected.values())
    shop = next(s for s in summary["by_schema"] if s["schema"] == "shop")
    assert shop["logical_size"]["delta"] == sum(
        e[1] for n, e in expected.items() if n.startswith("shop/")
    )


def test_compare_against_jsonl_and_in_row_formats(
    datadir: Path, changed_datadir: Path, tmp_path: Path
) -> None:
    old = tmp_path / "old.jsonl"
    proc = run(datadir, "--format", "jsonl")
    old.write_text(proc.stdout)
    proc = run(changed_datadir, "--format", "jsonl", "--compare", old)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[-1]["name"] == "shop/customers.ibd"
    assert lines[-1]["change"]["status"] == "dropped"
    status = {r["name"]: r["change"]["status"] for r in lines}
    expected = _expected_changes(datadir, changed_datadir)
    assert status == {n: e[0] for n, e in expected.items()}
    proc = run(changed_datadir, "--format", "csv", "--compare", old)
    records = {r["name"]: r for r in csv.DictReader(io.StringIO(proc.stdout))}
    for name, (st, d_logical, d_alloc) in expected.items():
        assert records[name]["change"] == st
        assert int(records[name]["logical_size_delta"]) == d_logical, name
        assert int(records[name]["allocated_size_delta"]) == d_alloc, name
    proc = run(changed_datadir, "--format", "markdown", "--compare", old)
    assert "## Changes" in proc.stdout
    assert "1 added, 1 dropped, 2 changed" in proc.stdout


def test_discovery_takes_only_tablespace_files(datadir: Path, tmp_path: Path) -> None:
    """Not .cfg/.frm/logs, nested schema folders, each file once even if named twice."""
    from ibdtool.report.batch import discover

    extra = tmp_path / "dd"
    shutil.copytree(datadir / "shop", extra / "shop")
    (extra / "shop" / "orders.cfg").write_text("x")
    (extra / "shop" / "orders.frm").write_text("x")
    (extra / "ib_logfile0").write_text("x")
    names = sorted(t.name for t in discover([extra, extra / "shop" / "orders.ibd"]))
    assert names == sorted(n for n in LAYOUT if n.startswith("shop/"))


def test_discovery_lists_each_file_once_through_links(tmp_path: Path) -> None:
    """A file named again through a symbolic link (to it, or to its folder) is listed once, a
    hard link (another file name) twice, a dangling link as a file of size 0; sizes are stat's.
    The second computation: every path the walk meets resolved whole (``realpath``), the first
    of each kept, as discovery did before it resolved each folder once."""
    from ibdtool.report.batch import discover, is_tablespace_name

    root = tmp_path / "dd"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "auto.cnf").write_text("x")
    shutil.copyfile(sample("mariadb/p16k-plain.ibd"), root / "a" / "t1.ibd")
    shutil.copyfile(sample("mysql80/plain.ibd"), root / "b" / "t2.ibd")
    os.link(root / "a" / "t1.ibd", root / "b" / "hard.ibd")
    (root / "b" / "soft.ibd").symlink_to(root / "a" / "t1.ibd")
    (root / "b" / "rel.ibd").symlink_to(Path("..") / "a" / "t1.ibd")
    (root / "b" / "dangling.ibd").symlink_to(root / "nowhere.ibd")
    (root / "c").symlink_to(root / "a", target_is_directory=True)  # not walked into
    (tmp_path / "alias").symlink_to(root, target_is_directory=True)
    given = [tmp_path / "alias", root, root / "c" / "t1.ibd"]
    expected: dict[str, tuple[str, int]] = {}
    for top in given[:2]:
        for folder, dirs, files in os.walk(top):
            dirs.sort()
            for f in sorted(files):
                if is_tablespace_name(f):
                    p = Path(folder) / f
                    size = p.stat().st_size if p.exists() else 0
                    expected.setdefault(os.path.realpath(p), (str(p), size))
    got = [(t.path, t.size) for t in discover(given)]
    assert got == list(expected.values())
    assert sorted(Path(p).name for p, _ in got) == ["dangling.ibd", "hard.ibd", "t1.ibd", "t2.ibd"]
