"""``ibdtool report host:path ...`` against a real sshd on 127.0.0.1.

One throwaway sshd (the fixture of ``tests/test_copy_remote.py``) and an ssh config naming it
as several "hosts": ``db-a`` and ``db-b`` (two aliases, two data directories), ``db-down`` (a
port nobody listens on) and ``db-denied`` (a key the server does not accept). Each remote row
is checked against a local ``ibdtool report`` of the same directory run on its own, and its
sizes and extents against ``stat`` and ``filefrag``; totals against sums made here; the
``--compare`` flow against a fan-out that runs ibdtool on each "host" through ssh itself, as
the README shows.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ibdtool.copy.remote import SshConfig
from ibdtool.report import remote as fleet
from tests.cli_runner import cli_env, run_ibdtool
from tests.conftest import sparse_copy
from tests.samples_manifest import sample
from tests.test_copy_remote import ThrowawaySshd, _free_port, seek_data_ranges, throwaway_sshd
from tests.test_report import LAYOUT, Entry, build_datadir, filefrag_extents, settle

REPO = Path(__file__).resolve().parents[1]

#: the second "host": a data directory (auto.cnf marks it) with unreadable files besides
LAYOUT_B: dict[str, Entry] = {
    "mysql.ibd": Entry("mysql80/plain.ibd", "sparse", "mysql", None, "dictionary"),
    "crm/contacts.ibd": Entry("mariadb/p16k-pc_zlib.ibd", "sparse", "crm", "contacts", "table"),
    "crm/notes.ibd": Entry("mysql57/zlib.ibd", "sparse", "crm", "notes", "table"),
    "crm/zip.ibd": Entry("mariadb/p16k-rc_kbs8.ibd", "sparse", "crm", "zip", "table"),
    "crm/dense.ibd": Entry("mariadb/p16k-pc_lz4.ibd", "dense", "crm", "dense", "table"),
}
UNREADABLE_B = ("crm/pipe.ibd", "crm/junk.ibd", "crm/empty.ibd")


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThrowawaySshd]:
    """The sshd, with ``db-a``, ``db-b``, ``db-down`` and ``db-denied`` in its ssh config."""
    root = tmp_path_factory.mktemp("fleet-sshd")
    with throwaway_sshd(root, "db-a") as server:
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / "other_key")],
            check=True,
        )
        common = (
            f"  HostName 127.0.0.1\n  UserKnownHostsFile {root}/known_hosts\n"
            "  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n"
            "  IdentitiesOnly yes\n  ConnectTimeout 20\n"
        )
        user = server.ssh_config.read_text().split("User ", 1)[1].split()[0]
        with server.ssh_config.open("a") as cfg:
            cfg.write(
                f"Host db-b\n{common}  Port {server.port}\n  User {user}\n"
                f"  IdentityFile {root}/client_key\n"
                f"Host db-down\n{common}  Port {_free_port()}\n  User {user}\n"
                f"  IdentityFile {root}/client_key\n"
                f"Host db-denied\n{common}  Port {server.port}\n  User {user}\n"
                f"  IdentityFile {root}/other_key\n"
            )
        yield server


@pytest.fixture(scope="module")
def dir_a(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_datadir(tmp_path_factory.mktemp("fleet-a") / "datadir")


@pytest.fixture(scope="module")
def dir_b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_datadir(tmp_path_factory.mktemp("fleet-b") / "datadir", LAYOUT_B)
    (root / "auto.cnf").write_text("[auto]\nserver-uuid=00000000-0000-0000-0000-000000000000\n")
    os.mkfifo(root / "crm/pipe.ibd")
    (root / "crm/junk.ibd").write_bytes(os.urandom(20000))
    (root / "crm/empty.ibd").touch()
    shutil.copyfile(sample("mysql57/zlib.cfg"), root / "crm/notes.cfg")  # its index names
    return root


def fleet_run(
    hosts: ThrowawaySshd, *args: str | Path, **env: str
) -> subprocess.CompletedProcess[str]:
    proc = run_ibdtool(
        "report", *args, env=cli_env(IBDTOOL_SSH=hosts.ssh_command, **env), timeout=600
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def local_rows(directory: Path) -> dict[str, dict[str, Any]]:
    """A local ``report --format jsonl`` of ``directory``, run on its own: path -> row."""
    proc = run_ibdtool("report", "--format", "jsonl", directory, timeout=600)
    assert proc.returncode in (0, 2), proc.stderr
    return {row["path"]: same_anywhere(row) for row in map(json.loads, proc.stdout.splitlines())}


#: a DROP's predicted cost depends on the filesystem the file is on, which the remote agent does
#: not report: a remote row leaves it unknown (docs/cost.md)
DROP_KEYS = ("drop_seconds", "drop_low", "drop_high", "drop_basis")


def same_anywhere(row: dict[str, Any], remote: bool = False) -> dict[str, Any]:
    """``row`` without its host and its DROP cost (which a remote row must leave unknown)."""
    if remote:
        assert all(row.get(k) is None for k in DROP_KEYS), row
    return {k: v for k, v in row.items() if k != "host" and k not in DROP_KEYS}


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


SUMMED = ("logical_size", "allocated_size", "pages", "extents", "unpunched_pages")


def sums(rows: list[dict[str, Any]]) -> dict[str, int]:
    files = [r for r in rows if r["kind"] != "host"]
    out = {k: sum(r.get(k) or 0 for r in files) for k in SUMMED}
    out["files"] = len(files)
    out["errors"] = sum(1 for r in rows if r["error"])
    out["checksum_invalid"] = sum((r.get("checksum") or {}).get("invalid", 0) for r in files)
    return out


# --- rows, totals and the failed host ------------------------------------------------------------


def test_rows_equal_a_local_report_and_a_down_host_is_one_row(
    hosts: ThrowawaySshd, dir_a: Path, dir_b: Path
) -> None:
    proc = fleet_run(
        hosts, "--format", "jsonl", f"db-a:{dir_a}", f"db-b:{dir_b}", "db-down:/var/lib/mysql"
    )
    assert proc.returncode == 2, proc.stderr
    lines = jsonl(proc.stdout)
    rows = [r for r in lines if "totals" not in r]
    by_host: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_host.setdefault(row["host"], []).append(row)
    assert sorted(by_host) == ["db-a", "db-b", "db-down"]

    # every row of a host is the row a local report of the same directory gives
    for host, directory, count in (("db-a", dir_a, len(LAYOUT)), ("db-b", dir_b, 8)):
        local = local_rows(directory)
        got = {r["path"]: same_anywhere(r, remote=True) for r in by_host[host]}
        assert len(got) == count
        assert got.keys() == local.keys()
        for path, row in got.items():
            assert row == local[path], path
            if row["error"] is None:  # and, independently, what stat and filefrag say
                st = os.stat(path)
                assert (row["logical_size"], row["allocated_size"]) == (
                    st.st_size,
                    st.st_blocks * 512,
                )
                assert row["extents"] == filefrag_extents(Path(path)), path
    b = {Path(r["path"]).relative_to(dir_b).as_posix(): r for r in by_host["db-b"]}
    assert {n for n, r in b.items() if r["error"]} == set(UNREADABLE_B)
    assert "not a regular file" in b["crm/pipe.ibd"]["error"]
    assert b["mysql.ibd"]["kind"] == "dictionary"  # auto.cnf made it a data directory there
    assert b["crm/dense.ibd"]["flags"] == ["no_holes", "unpunched"]
    assert [i["name"] for i in b["crm/notes.ibd"]["indexes"]] == [  # from the .cfg there
        "PRIMARY",
        "idx_customer",
        "idx_created_amount",
    ]
    a = {Path(r["path"]).relative_to(dir_a).as_posix(): r for r in by_host["db-a"]}
    assert a["legacy/broken.ibd"]["checksum"]["invalid"] == 1

    # the host that could not be reached: one row, the others reported all the same
    (down,) = by_host["db-down"]
    assert down["kind"] == "host" and down["flags"] == ["error"]
    assert down["error"].startswith("db-down: ssh failed:") and "refused" in down["error"]

    # per-host totals, then the fleet's, at the end of the stream; sums made here
    totals = lines[len(rows) :]
    assert [t.get("host") for t in totals] == ["db-a", "db-b", "db-down", None]
    for t in totals[:3]:
        assert {k: t["totals"][k] for k in sums([])} == sums(by_host[t["host"]])
    assert totals[2]["totals"]["host_error"] == down["error"]
    assert totals[3]["hosts"] == 3
    assert {k: totals[3]["totals"][k] for k in sums([])} == sums(rows)

    err = proc.stderr.splitlines()
    assert all(line.startswith("ibdtool: error: ") for line in err)
    assert f"ibdtool: error: {down['error']}" in err
    assert err[-1] == (
        "ibdtool: error: 1 of 3 hosts failed, 3 of "
        f"{len(LAYOUT) + 8} files could not be read (see their rows)"
    )


def test_every_format_has_hosts_and_their_totals(hosts: ThrowawaySshd, dir_a: Path) -> None:
    args = (f"db-a:{dir_a}", "db-down:/srv/mysql")
    doc = json.loads(fleet_run(hosts, "--format", "json", *args).stdout)
    assert doc["hosts"] == ["db-a", "db-down"]
    assert doc["paths"] == list(args)
    rows = doc["tablespaces"]
    assert {r["host"] for r in rows} == {"db-a", "db-down"}
    by_host = {t["host"]: t for t in doc["totals"]["by_host"]}
    for host in by_host:
        mine = [r for r in rows if r["host"] == host]
        assert {k: by_host[host][k] for k in sums([])} == sums(mine)
    assert {k: doc["totals"]["all"][k] for k in sums([])} == sums(rows)
    assert by_host["db-down"]["host_error"].startswith("db-down: ssh failed:")
    assert {(s["host"], s["schema"]) for s in doc["totals"]["by_schema"]} == {
        ("db-a", e.schema) for e in LAYOUT.values()
    }

    table = list(csv.DictReader(io.StringIO(fleet_run(hosts, "--format", "csv", *args).stdout)))
    assert [r["host"] for r in table if r["kind"] == "host_total"] == ["db-a", "db-down"]
    (fleet_line,) = [r for r in table if r["kind"] == "fleet_total"]
    assert int(fleet_line["files"]) == len(LAYOUT)
    assert int(fleet_line["allocated_size"]) == doc["totals"]["all"]["allocated_size"]
    down = [r for r in table if r["host"] == "db-down"]
    assert [r["kind"] for r in down] == ["host", "host_total"]
    assert down[1]["error"] == by_host["db-down"]["host_error"]

    text = fleet_run(hosts, *args, COLUMNS="200").stdout
    assert "Hosts" in text and "2 hosts (1 failed): " in text
    assert any(line.split()[:2] == ["db-down", "0"] for line in text.splitlines())


def test_a_missing_path_and_a_refused_login(hosts: ThrowawaySshd, dir_a: Path) -> None:
    proc = fleet_run(hosts, "--format", "jsonl", f"db-a:{dir_a}/no/such", f"db-denied:{dir_a}")
    assert proc.returncode == 2
    rows = [r for r in jsonl(proc.stdout) if "totals" not in r]
    assert sorted((r["host"], r["kind"]) for r in rows) == [("db-a", "host"), ("db-denied", "host")]
    errors = {r["host"]: r["error"] for r in rows}
    assert errors["db-a"] == f"db-a: {dir_a}/no/such: no such file or directory"
    assert errors["db-denied"].startswith("db-denied: ssh failed:")
    assert "Permission denied" in errors["db-denied"]
    assert proc.stderr.splitlines()[-1] == "ibdtool: error: 2 of 2 hosts failed (see their rows)"


def test_a_host_without_the_interpreter(hosts: ThrowawaySshd, dir_a: Path) -> None:
    proc = fleet_run(hosts, "--format", "json", "--remote-python", "/no/python3", f"db-a:{dir_a}")
    assert proc.returncode == 2
    (row,) = json.loads(proc.stdout)["tablespaces"]
    assert (row["host"], row["kind"], row["path"]) == ("db-a", "host", str(dir_a))
    assert row["error"] == (
        "db-a: /no/python3 not found on the remote host (ibdtool runs a small python3 program "
        "there; install python3 or pass --remote-python PATH)"
    )


#: the remote "python3" of a connection that breaks: the agent's output cut after 300 KiB
#: (unbuffered: head -c would hold the handshake back), then the whole session killed
CUT_PYTHON = """#!/bin/sh
python3 "$@" | python3 -c '
import os
left = 307200
while left > 0:
    data = os.read(0, min(65536, left))
    if not data:
        break
    os.write(1, data)
    left -= len(data)
'
kill 0
"""


def test_a_connection_lost_half_way(hosts: ThrowawaySshd, dir_a: Path, tmp_path: Path) -> None:
    """The rows read before the connection broke stay, then one row says it was lost."""
    wrapper = tmp_path / "python3-cut"
    wrapper.write_text(CUT_PYTHON)
    wrapper.chmod(0o755)
    proc = fleet_run(hosts, "--format", "jsonl", "--remote-python", str(wrapper), f"db-a:{dir_a}")
    assert proc.returncode == 2
    rows = [r for r in jsonl(proc.stdout) if "totals" not in r]
    *read, lost = rows
    assert lost["kind"] == "host" and lost["host"] == "db-a"
    assert lost["error"].startswith("db-a: connection lost")
    assert 0 < len(read) < len(LAYOUT)
    local = local_rows(dir_a)
    for row in read:
        assert same_anywhere(row, remote=True) == local[row["path"]]


def test_refusals_are_one_line(hosts: ThrowawaySshd, dir_a: Path) -> None:
    for extra in ("--simulate", "--map"):
        proc = fleet_run(hosts, extra, f"db-a:{dir_a}")
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr.startswith(f"ibdtool: error: {extra} is not available for host:path")
        assert len(proc.stderr.splitlines()) == 1
    proc = fleet_run(hosts, f"db-a:{dir_a}", str(dir_a))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith(f"ibdtool: error: {dir_a}: a local path among host:path ones")


# --- the README's fan-out, then --compare --------------------------------------------------------


def fan_out(hosts: ThrowawaySshd, targets: list[tuple[str, Path]]) -> str:
    """What the README's ssh fan-out does: ibdtool run on each host through ssh, each line
    tagged with its host (jq there; json here)."""
    out = []
    for host, directory in targets:
        remote = (
            f"cd {REPO} && PYTHONPATH={REPO} {sys.executable} -m ibdtool.cli report "
            f"{directory} --format jsonl"
        )
        proc = subprocess.run(
            ["ssh", "-F", str(hosts.ssh_config), host, remote],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        out += [json.dumps({**json.loads(line), "host": host}) for line in proc.stdout.splitlines()]
    return "\n".join(out) + "\n"


def small_datadir(root: Path) -> Path:
    build_datadir(
        root,
        {
            "shop/a.ibd": Entry("mysql80/zlib.ibd", "sparse", "shop", "a", "table"),
            "shop/b.ibd": Entry("mysql80/plain.ibd", "sparse", "shop", "b", "table"),
            "shop/c.ibd": Entry("mariadb/p16k-pc_zlib.ibd", "sparse", "shop", "c", "table"),
        },
    )
    return root


def test_compare_against_a_fan_out_and_against_itself(hosts: ThrowawaySshd, tmp_path: Path) -> None:
    one, two = small_datadir(tmp_path / "one"), small_datadir(tmp_path / "two")
    before = fan_out(hosts, [("db-a", one), ("db-b", two)])
    # a third host's rows, from when it could be reached
    ghost = [
        json.dumps({**row, "host": "db-down"})
        for row in map(json.loads, before.splitlines())
        if row["host"] == "db-a"
    ]
    (tmp_path / "before.jsonl").write_text(before + "\n".join(ghost) + "\n")

    # on db-b: one table dropped, one added, one copied without its holes
    (two / "shop/a.ibd").unlink()
    sparse_copy(sample("mysql57/lz4.ibd"), two / "shop/d.ibd")
    settle(two / "shop/d.ibd")
    dense = two / "shop/c.ibd"
    shutil.copyfile(sample("mariadb/p16k-pc_zlib.ibd"), dense)  # writes every byte
    settle(dense)

    args = (f"db-a:{one}", f"db-b:{two}", "db-down:/var/lib/mysql")
    proc = fleet_run(hosts, "--format", "json", "--compare", tmp_path / "before.jsonl", *args)
    assert proc.returncode == 2, proc.stderr  # db-down
    compare = json.loads(proc.stdout)["compare"]
    changes = {(c["key"], c["status"]) for c in compare["changes"]}
    assert changes == {
        ("db-b:shop/a.ibd", "dropped"),
        ("db-b:shop/d.ibd", "added"),
        ("db-b:shop/c.ibd", "changed"),
        ("db-down:/var/lib/mysql", "added"),  # its error row; its old tables are not dropped
    }
    (changed,) = [c for c in compare["changes"] if c["status"] == "changed"]
    assert changed["host"] == "db-b"
    assert changed["flags_added"] == ["no_holes", "unpunched"]
    assert changed["allocated_size"]["new"] == os.stat(dense).st_blocks * 512
    summary = compare["summary"]
    assert (summary["added"], summary["dropped"], summary["changed"]) == (2, 1, 1)
    assert summary["unchanged"] == 4  # db-a's three and db-b's b.ibd

    # a fleet report's own jsonl (totals lines and all) is a --compare input: nothing changed
    proc = fleet_run(hosts, "--format", "jsonl", *args[:2])
    (tmp_path / "now.jsonl").write_text(proc.stdout)
    proc = fleet_run(hosts, "--format", "json", "--compare", tmp_path / "now.jsonl", *args[:2])
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["compare"]["summary"]
    assert (summary["added"], summary["dropped"], summary["changed"]) == (0, 0, 0)
    assert summary["unchanged"] == 6


# --- what crosses the network --------------------------------------------------------------------


def test_holes_never_cross_the_network(hosts: ThrowawaySshd, tmp_path: Path) -> None:
    """A 1 GiB sparse tablespace is read whole through the agent for a few hundred KiB."""
    path = sparse_copy(sample("mariadb/p16k-pc_zlib.ibd"), tmp_path / "big.ibd")
    os.truncate(path, 1 << 30)
    settle(path)
    data_bytes = sum(end - start for start, end in seek_data_ranges(path))
    remote = fleet.RemoteHost("db-a", SshConfig(("ssh", "-F", str(hosts.ssh_config)))).open()
    try:
        f = remote.file(str(path))
        assert f.allocation(True).data_ranges == tuple(seek_data_ranges(path))
        assert f.allocation(True).allocated == os.stat(path).st_blocks * 512
        local = path.read_bytes()
        pos, step = 0, 64 << 20
        while pos < f.size:
            assert f.read(pos, step) == local[pos : pos + step], pos
            pos += step
        assert f.current_size() == 1 << 30
        f.close()
    finally:
        remote.close()
    assert 0 < remote.received <= data_bytes + 4096
