"""Start-up: a command imports only what it uses.

``inspect --json`` is what scripts run over many files; it must not pay for the Textual UI,
the MySQL client, Rich's tables, the keyring and AES code of encrypted files, the codecs its
file does not use, the ``.cfg`` reader when there is no ``.cfg``, or the other commands'
modules; nor, with ``checksum``, for construct (the read path uses the formats generated from
its declarations, parsers/_structs_gen.py), the decryption of pages of an unencrypted file,
the ROW_FORMAT=COMPRESSED page rebuild of a file without such pages, or the fork-and-pickle
split of a file too small to split. Checked in a fresh interpreter's ``sys.modules``; the time
it takes is in bench/ (bench_startup.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import click
import pytest

from ibdtool.cli.main import IbdtoolGroup, main
from tests.catalog import CORPUS
from tests.conftest import SAMPLES

PROBE = """
import sys
from ibdtool.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(
    {m for m in sys.modules if m in HEAVY or m.split(".")[0] in HEAVY}
)
print(code, " ".join(heavy) or "-", file=sys.stderr)
"""

#: what a plain, unencrypted small file's ``inspect --json`` must not import
HEAVY = {
    "rich",
    "textual",
    "pymysql",
    "cryptography",
    "lz4",
    "zstandard",
    "cramjam",
    "lzo",
    "ibdtool.parsers.keyring",
    "ibdtool.parsers.tabledef",
    "ibdtool.cli.server",
    "ibdtool.cli.copy",
    "ibdtool.cli.report",
    "ibdtool.cli.records",
    "ibdtool.cli.tui",
    "ibdtool.cli.render",
    "multiprocessing",
    "concurrent",
    # issue 14, start-up: ~10 ms of construct (with pdb, inspect, hashlib) and the rest
    "construct",
    "pdb",
    "hashlib",
    "ibdtool.parsers.structs",
    "ibdtool.parsers.pages",
    "ibdtool.parsers.crypt",
    "ibdtool.parsers.cryptinfo",
    "ibdtool.tablespace.decrypt",
    "ibdtool.parsers.zip_page",
    "ibdtool.parsers.compact_rec",
    "ibdtool.tablespace.parallel",
    "ibdtool.workers",
    "pickle",
}

#: what a plain small file's ``inspect --json`` needs no more than the above (issue 24, item 4:
#: start-up): the ``checksum`` command's module (``inspect`` verifies only classic
#: page_compressed images through it), the SDI reader (only a MySQL 8 file has an SDI) and the
#: calibration state file's reader with the measuring code (only where a state file exists)
INSPECT_HEAVY = HEAVY | {
    "ibdtool.tablespace.checksum",
    "ibdtool.parsers.sdi",
    "ibdtool.fs.calibrate",
}


#: what the start-up bench's file (a plain one, every page data: ``tiny.ibd``) needs no more
#: than the above (issue 24, item 4): the page decoder with its record classes (the columnar
#: tallies do without: a file whose holes are tallied through the decoder's zero page loads
#: it), the TUI's per-page records and the rebuilt fill of a ROW_FORMAT=COMPRESSED file; and
#: ``dataclasses`` (the records of inspect's path are plain classes and named tuples: a
#: dataclass cost 0.4–1 ms to make, the module 0.6 ms to load; the decoder's records and
#: checksum's result, which tests compare, are dataclasses); and ``ctypes``, which the
#: compiled chunk loop (``ibdtool.parsers.fcrc32_native``) is loaded with, looked up only for a
#: chunk that holds a full_crc32 page_compressed image (~4 ms)
PLAIN_HEAVY = INSPECT_HEAVY | {
    "ibdtool.parsers.page",
    "ibdtool.tablespace.header_pages",
    "ibdtool.tablespace.zip_fill",
    "dataclasses",
    "ctypes",
}


def _heavy(
    *args: str, heavy: set[str] = HEAVY, state: Path | None = None, bare: bool = False
) -> tuple[int, list[str], str]:
    """Run ibdtool with ``args`` in a fresh interpreter: its exit code, the names of ``heavy``
    it imported, its stdout. ``state``: its XDG_STATE_HOME (the calibration file's home).
    ``bare``: without ``site`` (``python -S``, the venv's packages put on ``sys.path`` by hand),
    so that what an editable install's ``.pth`` imports at start is not counted as ibdtool's."""
    env = {**os.environ, "XDG_STATE_HOME": str(state)} if state else None
    head = f"import sys; sys.path.append({sysconfig.get_paths()['purelib']!r})\n" if bare else ""
    done = subprocess.run(
        [
            sys.executable,
            *(["-S"] if bare else []),
            "-c",
            f"{head}HEAVY = {sorted(heavy)!r}\n{PROBE}",
            *args,
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    code, heavy = done.stderr.strip().splitlines()[-1].split(" ", 1)
    return int(code), [] if heavy == "-" else heavy.split(), done.stdout


def test_inspect_json_imports_no_ui_and_no_client(tmp_path: Path) -> None:
    # a copy without the .cfg beside it: a .cfg is read with ibdtool.parsers.tabledef
    path = tmp_path / "t.ibd"
    shutil.copyfile(SAMPLES / "mariadb" / "p16k-pc_zlib.ibd", path)
    code, heavy, out = _heavy(
        "inspect", "--json", str(path), heavy=INSPECT_HEAVY, state=tmp_path / "state"
    )
    assert code == 0
    assert json.loads(out)["pages"] == path.stat().st_size // 16384
    assert json.loads(out)["drop_cost"]["source"] in ("built-in", "none")
    assert heavy == []


def test_inspect_json_of_a_plain_file_loads_no_decoder(tmp_path: Path) -> None:
    """The bench's case (bench/bench_startup.py: the 4K sample without its ``.cfg``): every
    page is tallied from its columns, so neither the decoder's module nor its record classes
    are made; the answer is the decoder's (tests/test_header_scan.py)."""
    path = tmp_path / "tiny.ibd"
    shutil.copyfile(SAMPLES / "mariadb" / "p4k-plain.ibd", path)
    code, heavy, out = _heavy(
        "inspect", "--json", str(path), heavy=PLAIN_HEAVY, state=tmp_path / "state"
    )
    assert code == 0
    assert json.loads(out)["pages"] == path.stat().st_size // 4096
    assert heavy == []
    checksum_heavy = PLAIN_HEAVY - INSPECT_HEAVY - {"dataclasses"}
    code, heavy, out = _heavy("checksum", str(path), heavy=checksum_heavy)
    assert code == 0 and heavy == []


def test_the_probe_sees_the_decoder_the_zip_fill_and_the_page_records(tmp_path: Path) -> None:
    """Where they are used, the names PLAIN_HEAVY adds are loaded, so that each can fail: the
    decoder for a file with a hole (its zero page), the zip fill for a ROW_FORMAT=COMPRESSED
    file, the per-page records for an ``on_page`` listener (the TUI's page map)."""
    path = tmp_path / "holed.ibd"
    with path.open("wb") as out:
        out.write((SAMPLES / "mariadb" / "p4k-plain.ibd").read_bytes())
        out.truncate(out.tell() + 64 * 4096)  # a hole of 64 pages at the end
    added = PLAIN_HEAVY - INSPECT_HEAVY - {"ctypes"}  # ctypes: below
    code, heavy, out = _heavy("inspect", "--json", str(path), heavy=added)
    assert code == 0 and json.loads(out)["pages"] == path.stat().st_size // 4096
    assert heavy == ["dataclasses", "ibdtool.parsers.page"]
    code, heavy, out = _heavy(
        "inspect", "--json", str(SAMPLES / "mariadb" / "p16k-rc_kbs8.ibd"), heavy=added
    )
    assert code == 0 and json.loads(out)["zip_fill"]["rebuilt"] > 0
    assert heavy == ["dataclasses", "ibdtool.parsers.page", "ibdtool.tablespace.zip_fill"]
    done = subprocess.run(
        [sys.executable, "-c", ON_PAGE_PROBE, str(SAMPLES / "mariadb" / "p4k-plain.ibd")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    pages, loaded = done.stdout.split(" ", 1)
    assert int(pages) == (SAMPLES / "mariadb" / "p4k-plain.ibd").stat().st_size // 4096
    assert loaded.split() == ["ibdtool.parsers.page", "ibdtool.tablespace.header_pages"]
    # ctypes: for a file of full_crc32 page_compressed images, where the compiled loop is built
    from ibdtool.parsers.fcrc32_native import library

    images = SAMPLES / "mariadb" / "p16k-pc_zlib.ibd"
    code, heavy, out = _heavy("checksum", str(images), heavy={"ctypes"})
    assert code == 0 and ("ctypes" in heavy) == (library() is not None), out


ON_PAGE_PROBE = """
import sys
from ibdtool.tablespace import Tablespace, inspect_tablespace
seen = []
with Tablespace(sys.argv[1]) as ts:
    inspect_tablespace(ts, on_page=seen.append)
names = ("ibdtool.parsers.page", "ibdtool.tablespace.header_pages")
print(len(seen), *sorted(m for m in sys.modules if m in names))
"""


def test_the_probe_sees_the_calibration_reader_where_there_is_a_state_file(
    tmp_path: Path,
) -> None:
    """With a calibration of the file's mount in the state file, ``inspect --json`` reads it
    (its drop cost says so) and so loads ibdtool.fs.calibrate: the name can fail."""
    from ibdtool.fs import Calibration, mount_of, save_calibration

    mount = mount_of(tmp_path)
    assert mount is not None
    state = tmp_path / "state"
    cal = Calibration(
        mount.device, mount.fstype, mount.mount_point, mount.discard, str(tmp_path),
        "2026-01-01 00:00 UTC", 1000, (1e-4, 2e-4), (0.01, 0.02),
    )  # fmt: skip
    save_calibration(cal, state / "ibdtool" / "calibration.json")
    path = tmp_path / "t.ibd"
    shutil.copyfile(SAMPLES / "mariadb" / "p16k-pc_zlib.ibd", path)
    code, heavy, out = _heavy("inspect", "--json", str(path), heavy=INSPECT_HEAVY, state=state)
    assert code == 0
    assert json.loads(out)["drop_cost"]["source"] == "calibration"
    assert heavy == ["ibdtool.fs.calibrate"]


def test_the_probe_sees_the_checksum_module_and_the_sdi_reader(tmp_path: Path) -> None:
    """``inspect --json`` loads the checksum module for a file of classic page_compressed
    images (their checksum is the inner page's) and the SDI reader for a MySQL 8 file, so
    that the two names in INSPECT_HEAVY can fail."""
    path = tmp_path / "t.ibd"
    shutil.copyfile(SAMPLES / "mariadb" / "p16k-crc32_pc_zlib.ibd", path)
    code, heavy, out = _heavy("inspect", "--json", str(path), heavy=INSPECT_HEAVY)
    assert code == 0 and json.loads(out)["checksum"]["invalid"] == 0
    assert heavy == ["ibdtool.tablespace.checksum"]
    path = tmp_path / "m.ibd"
    shutil.copyfile(SAMPLES / "mysql80" / "lz4.ibd", path)
    code, heavy, out = _heavy("inspect", "--json", str(path), heavy=INSPECT_HEAVY)
    assert code == 0 and json.loads(out)["sdi"]["table"]
    assert "ibdtool.parsers.sdi" in heavy


UNSAFE_PROBE = """
import sys
from ibdtool.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
text = sys.modules["ibdtool.present.text"]
before = type(text._UNSAFE).__name__
print(before, text.shown("a\\x1b[2Jb\\u202e"), type(text._UNSAFE).__name__, file=sys.stderr)
"""


def test_inspect_json_compiles_no_escape_pattern(tmp_path: Path) -> None:
    """The terminal-escape pattern (~0.5 ms to compile) is compiled at its first use, which
    ``inspect --json`` of a plain file never reaches; once used it escapes as before and the
    module holds the compiled pattern itself."""
    path = tmp_path / "t.ibd"
    shutil.copyfile(SAMPLES / "mariadb" / "p4k-plain.ibd", path)
    done = subprocess.run(
        [sys.executable, "-c", UNSAFE_PROBE, "inspect", "--json", str(path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    before, escaped, after = done.stderr.strip().splitlines()[-1].split(" ")
    assert before == "_CompiledAtFirstUse"
    assert escaped == "a\\x1b[2Jb\\u202e"
    assert after == "Pattern"


def test_checksum_of_a_small_file_imports_no_keyring() -> None:
    path = SAMPLES / "mariadb" / "p16k-crc32_plain.ibd"
    # nor the SDI reader or the calibration code (INSPECT_HEAVY less its own checksum module)
    extra = INSPECT_HEAVY - {"ibdtool.tablespace.checksum"}
    code, heavy, out = _heavy("checksum", str(path), heavy=extra)
    assert code == 0
    assert "OK" in out or "ok" in out.lower()
    assert heavy == [m for m in heavy if m.split(".")[0] == "rich"]  # the text verdict


#: what ``--help`` and a text ``checksum`` need no more than :data:`HEAVY` (issue 24, item 4):
#: ``json`` (written for JSON output only); ``--help`` also no ``dataclasses`` and no
#: ``pathlib`` (with ``urllib`` and ``ipaddress``, ~3 ms: a tablespace's reader loads it)
TEXT_HEAVY = HEAVY | {"json"}


def test_help_and_a_text_checksum_load_no_json(tmp_path: Path) -> None:
    """Run bare (no ``site``: setup.sh's path entry imports nothing at start either), ``--help``
    loads neither ``json`` nor ``pathlib``, a text ``checksum`` no ``json``; ``checksum
    --json`` loads ``json`` (so that the name can fail)."""
    path = tmp_path / "tiny.ibd"
    shutil.copyfile(SAMPLES / "mariadb" / "p4k-plain.ibd", path)
    code, heavy, out = _heavy("--help", heavy=TEXT_HEAVY | {"pathlib", "dataclasses"}, bare=True)
    assert code == 0 and "inspect" in out and heavy == []
    code, heavy, out = _heavy("checksum", str(path), heavy=TEXT_HEAVY, bare=True)
    assert code == 0 and "OK" in out and heavy == []
    code, heavy, out = _heavy("checksum", "--json", str(path), heavy=TEXT_HEAVY, bare=True)
    assert code == 0 and json.loads(out)["pages"] == path.stat().st_size // 4096
    assert "json" in heavy


def test_help_imports_no_lazy_command() -> None:
    """``ibdtool --help`` lists every command from the table, importing none of them."""
    code, heavy, out = _heavy("--help")
    assert code == 0
    assert heavy == []
    for name in IbdtoolGroup.lazy_commands:
        assert f"  {name} " in out


@pytest.mark.parametrize("name", sorted(IbdtoolGroup.lazy_commands))
def test_lazy_help_is_the_commands_own(name: str) -> None:
    """The help line ``--help`` shows for a lazy command is the one its module declares, at
    every terminal width."""
    ctx = click.Context(main)
    real = main.get_command(ctx, name)
    assert real is not None
    stub = click.Command(name, help=IbdtoolGroup.lazy_commands[name][1])
    for limit in range(20, 200, 7):
        assert stub.get_short_help_str(limit) == real.get_short_help_str(limit)


def test_the_probe_sees_what_a_table_imports() -> None:
    """The same probe on ``inspect`` without --json finds Rich, and on a file with a .cfg
    the table-definition reader (so it can fail)."""
    code, heavy, _ = _heavy("inspect", str(SAMPLES / "mariadb" / "p16k-pc_zlib.ibd"))
    assert code == 0
    assert "rich" in heavy
    assert "ibdtool.parsers.tabledef" in heavy


def test_the_probe_sees_construct_and_decryption() -> None:
    """Where they are needed, construct (the page view's declarations) and the decryption
    modules (a MySQL encrypted file: its page 0 key info opens ibdtool.tablespace.decrypt) are
    found."""
    code, heavy, _ = _heavy("page", "--json", str(SAMPLES / "mariadb" / "p4k-plain.ibd"), "3")
    assert code == 0
    assert {"construct", "ibdtool.parsers.structs", "ibdtool.parsers.pages"} <= set(heavy)
    encrypted = CORPUS / "percona-parser" / "encrypted_test.ibd"
    code, heavy, out = _heavy("inspect", "--json", str(encrypted))
    assert code == 0
    assert json.loads(out)["encryption"]["vendor"] == "mysql"
    assert {
        "ibdtool.tablespace.decrypt",
        "ibdtool.parsers.crypt",
        "ibdtool.parsers.cryptinfo",
    } <= set(heavy)
    assert "construct" not in heavy


def test_pages_json_imports_no_rich(tmp_path: Path) -> None:
    # a copy without the .cfg beside it: a .cfg is read with ibdtool.parsers.cfg (construct)
    path = tmp_path / "t.ibd"
    shutil.copyfile(SAMPLES / "mariadb" / "p16k-pc_zlib.ibd", path)
    code, heavy, out = _heavy("pages", "--json", str(path))
    assert code == 0
    assert len(out.splitlines()) == path.stat().st_size // 16384
    assert not {m.split(".")[0] for m in heavy} & {
        "rich",
        "textual",
        "pymysql",
        "construct",
        "cryptography",
        "hashlib",
    }
    assert not {
        "ibdtool.parsers.keyring",
        "ibdtool.parsers.crypt",
        "ibdtool.tablespace.decrypt",
    } & set(heavy)


def test_the_cli_raises_the_young_gc_threshold() -> None:
    """Importing the CLI (the first thing the console script and ``python -m ibdtool.cli`` do)
    raises the cyclic collector's young-generation threshold: ~20 passes fewer while the
    modules load (see ibdtool/cli/__init__.py); the older generations keep theirs."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gc; d = gc.get_threshold(); import ibdtool.cli; print(*d, *gc.get_threshold())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    before, after = done.stdout.split()[:3], done.stdout.split()[3:]
    assert int(after[0]) >= 20_000 > int(before[0])
    assert after[1:] == before[1:]


#: the modules of inspect's path that declare NamedTuples without ``from __future__ import
#: annotations`` (each says why)
REAL_ANNOTATIONS = (
    "ibdtool.fs.allocation",
    "ibdtool.fs.extents",
    "ibdtool.fs.mounts",
    "ibdtool.fs.rates",
    "ibdtool.parsers.codecs",
    "ibdtool.parsers.envelope",
    "ibdtool.parsers.flags",
    "ibdtool.parsers.identity",
    "ibdtool.parsers.space",
    "ibdtool.parsers.xdes",
)


def test_the_start_up_records_take_no_string_annotations() -> None:
    """The NamedTuples on inspect's path get their field types as objects, not strings:
    typing compiles each string annotation (a ``ForwardRef``) when the class is made, at every
    start (issue 24, item 4). The two fields typed by a module imported for type checkers
    only (SpaceFormat's crypt info) are the strings left; a module given ``from __future__
    import annotations`` again fails here."""
    import importlib
    import typing

    strings = {}
    for name in REAL_ANNOTATIONS:
        for cls in vars(importlib.import_module(name)).values():
            if isinstance(cls, type) and issubclass(cls, tuple) and cls.__module__ == name:
                hints = vars(cls).get("__annotations__", {})
                found = [f for f, t in hints.items() if isinstance(t, typing.ForwardRef | str)]
                if found:
                    strings[cls.__name__] = found
    assert strings == {"SpaceFormat": ["mariadb_crypt", "mysql_encryption"]}


def test_the_cli_freezes_what_its_imports_made() -> None:
    """Importing the CLI freezes the objects its imports made (ibdtool/cli/__init__.py): the
    collector has almost nothing left to walk, neither in a later pass nor at exit."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gc; import ibdtool.cli; print(gc.get_freeze_count(), len(gc.get_objects()))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    frozen, left = map(int, done.stdout.split())
    assert frozen > 10_000
    assert left < frozen // 20


REPO = Path(__file__).resolve().parent.parent


def _compiled_from_source(tree: Path) -> list[str]:
    """The modules of ``tree`` that ``ibdtool --help`` compiles from their source at start-up
    under PYTHONDONTWRITEBYTECODE=1 (Python's own word: ``python -v`` says ``code object from``
    the ``.py`` file, not from its ``.pyc``)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(tree),
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": str(tree),
    }
    done = subprocess.run(
        [sys.executable, "-v", "-m", "ibdtool.cli", "--help"],
        capture_output=True, text=True, check=True, env=env, cwd=tree,
    )  # fmt: skip
    prefix = f"# code object from {tree}/"
    return [line[len(prefix) :] for line in done.stderr.splitlines() if line.startswith(prefix)]


def test_setup_compiles_the_tree_so_no_start_compiles_it(tmp_path: Path) -> None:
    """``scripts/setup.sh`` byte-compiles the tree its editable install runs, so that where
    PYTHONDONTWRITEBYTECODE is set (this machine) a start reads ``.pyc`` instead of compiling
    every module again (bench/RESULTS.md has the time). Run on a copy of the tree without
    ``.pyc``: before setup's compile line every module is compiled at start-up, after it none."""
    tree = tmp_path / "tree"
    for pkg in ("ibdtool", "parsers", "tui"):
        shutil.copytree(
            REPO / pkg, tree / pkg, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    before = _compiled_from_source(tree)
    # parsers/ and tui/ are found through their links (docs/layout.md)
    assert {"ibdtool/cli/main.py", "ibdtool/parsers/__init__.py"} <= set(before)
    (line,) = [
        line
        for line in (REPO / "scripts" / "setup.sh").read_text().splitlines()
        if "-m compileall" in line and not line.lstrip().startswith("#")
    ]
    subprocess.run(
        ["bash", "-c", line.replace(".venv/bin/python", sys.executable)],
        check=True, cwd=tree, env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert _compiled_from_source(tree) == []
