"""Building ibdtool's wheel says nothing alarming, declares its licence the PEP 639 way, and
installs under one name, beside other software.

Oracles: setuptools itself (the version ``pyproject.toml``'s ``build-system`` asks for, in pip's
isolated build environment, as ``scripts/setup.sh`` installs it): the build prints no
deprecation warning, and the wheel's METADATA carries ``License-Expression: MIT`` and the
LICENSE file. The tree's own files: every module of ``parsers/``, ``tui/`` and ``ibdtool/`` is
in the wheel under ``ibdtool`` (docs/layout.md, "Installed names"), and nothing else is at its
top. pip and a fresh venv (no system site-packages): the wheel installed there with its
dependencies (from the index or pip's cache) beside two other projects' packages named ``tui``
and ``parsers`` leaves them importable as they were, its ``ibdtool`` prints what the
checkout's prints, and it starts from the ``.pyc`` pip compiled (``python -v``), even under
PYTHONDONTWRITEBYTECODE.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.catalog import REPO
from tests.cli_runner import run_ibdtool

SAMPLE = REPO / "samples" / "mariadb" / "p16k-crc32_pc_lz4.ibd"

#: every build here runs setuptools in this tree (its build/ and egg-info): two at once collide
#: ("File exists: build/bdist.linux-x86_64/wheel/..."), so the module's tests share one worker
pytestmark = pytest.mark.xdist_group("wheel-build")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel pip builds from this tree, and what the build printed."""
    out = tmp_path_factory.mktemp("wheel")
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    (wheel,) = out.glob("ibdtool-*.whl")
    return wheel, res.stdout + res.stderr


def test_wheel_builds_without_warnings_with_an_spdx_licence(built: tuple[Path, str]) -> None:
    wheel, printed = built
    assert "Deprecat" not in printed, printed[-3000:]
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = zf.read(meta).decode()
    assert "License-Expression: MIT" in text.splitlines()
    assert "License-File: LICENSE" in text.splitlines()
    assert any(n.endswith("licenses/LICENSE") for n in names)


def _tree_files() -> set[str]:
    """Where the wheel must hold each module and data file of the three folders."""
    want = set()
    for folder, installed in (
        ("ibdtool", "ibdtool"),
        ("parsers", "ibdtool/parsers"),
        ("tui", "ibdtool/tui"),
    ):
        base = REPO / folder
        for path in base.rglob("*"):
            rel = path.relative_to(base)
            if rel.parts[0] in ("parsers", "tui") and folder == "ibdtool":
                continue  # the links to the two folders, walked from their own side
            if path.suffix in (".py", ".tcss") and "__pycache__" not in rel.parts:
                want.add(f"{installed}/{rel.as_posix()}")
    return want


def test_the_wheel_installs_everything_under_ibdtool_and_nothing_beside(
    built: tuple[Path, str],
) -> None:
    wheel, _ = built
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"ibdtool"}
    assert _tree_files() <= names, sorted(_tree_files() - names)[:20]
    assert "ibdtool/cli/ibdtool.1" in names


def _foreign_wheel(out: Path, name: str) -> Path:
    """A tiny wheel of another project, one package ``name`` whose ``__init__`` says whose it is
    (written as the wheel format says, as a build backend would)."""
    files = {
        f"{name}/__init__.py": f'OWNER = "the other {name} project"\n'.encode(),
        f"{name}-1.0.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode()
        ),
        f"{name}-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for arcname, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arcname},sha256={digest},{len(data)}")
    record.append(f"{name}-1.0.dist-info/RECORD,,")
    wheel = out / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for arcname, data in files.items():
            zf.writestr(arcname, data)
        zf.writestr(f"{name}-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


FOREIGN_CHECK = (
    "import tui, parsers, ibdtool.tui, ibdtool.parsers, ibdtool.tui.app\n"
    "print(tui.OWNER); print(parsers.OWNER)\n"
    "print(ibdtool.parsers.__file__); print(ibdtool.tui.app.__file__)\n"
)


def test_the_wheel_installs_beside_other_tui_and_parsers_packages(
    built: tuple[Path, str], tmp_path: Path
) -> None:
    wheel, _ = built
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=False)
    py = env_dir / "bin" / "python"
    foreign = [_foreign_wheel(tmp_path, "tui"), _foreign_wheel(tmp_path, "parsers")]
    # the others first, ibdtool (with its dependencies) after: what it must not overwrite
    for args in ([*map(str, foreign)], [str(wheel)]):
        res = subprocess.run(
            [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
            capture_output=True, text=True, check=False, timeout=1200,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},  # as this machine sets it
        )  # fmt: skip
        assert res.returncode == 0, res.stderr[-3000:]
    # run from elsewhere, so that nothing of this checkout is on sys.path
    clean = {
        "PATH": f"{env_dir / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "COLUMNS": "100",
    }
    # the checkout's own ibdtool, in the same environment but for its PYTHONPATH: the oracle
    checkout = {**clean, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    version = subprocess.run(
        [env_dir / "bin" / "ibdtool", "--version"],
        capture_output=True, text=True, check=False, env=clean, cwd=tmp_path,
    )  # fmt: skip
    assert version.returncode == 0, version.stderr
    assert version.stdout == run_ibdtool("--version", env=checkout).stdout
    inspected = subprocess.run(
        [env_dir / "bin" / "ibdtool", "inspect", SAMPLE],
        capture_output=True, text=True, check=False, env=clean, cwd=tmp_path,
    )  # fmt: skip
    assert inspected.returncode == 0, inspected.stderr
    assert inspected.stdout == run_ibdtool("inspect", SAMPLE, env=checkout).stdout
    seen = subprocess.run(
        [py, "-c", FOREIGN_CHECK],
        capture_output=True, text=True, check=False, env=clean, cwd=tmp_path,
    )  # fmt: skip
    assert seen.returncode == 0, seen.stderr
    owner_tui, owner_parsers, ours_parsers, ours_app = seen.stdout.splitlines()
    assert owner_tui == "the other tui project"
    assert owner_parsers == "the other parsers project"
    site = env_dir.resolve()
    assert Path(ours_parsers).resolve().is_relative_to(site)
    assert Path(ours_parsers).parent.parent.name == "ibdtool"
    assert Path(ours_app).resolve().is_relative_to(site)
    # pip compiled what it installed: no start compiles ibdtool's modules again, even where
    # PYTHONDONTWRITEBYTECODE keeps Python from writing .pyc (`python -v`: "code object from"
    # the .py rather than its .pyc)
    verbose = subprocess.run(
        [py, "-v", "-m", "ibdtool.cli", "inspect", SAMPLE],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env={**clean, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert verbose.returncode == 0, verbose.stderr[-3000:]
    loaded = [line for line in verbose.stderr.splitlines() if line.startswith("# code object from")]
    assert any("/ibdtool/parsers/__pycache__/" in line for line in loaded)
    assert [line for line in loaded if line.endswith(".py") and "/ibdtool/" in line] == []


def _editable_beside_a_foreign_tui(tmp_path: Path) -> Path:
    """A fresh venv holding another project's ``tui`` and then ``pip install -e`` of this
    checkout: its Python."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=False)
    py = env_dir / "bin" / "python"
    for args in ([str(_foreign_wheel(tmp_path, "tui"))], ["--no-deps", "-e", str(REPO)]):
        res = subprocess.run(
            [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
            capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr[-3000:]
    return py


def test_an_editable_install_maps_only_ibdtool(tmp_path: Path) -> None:
    """``pip install -e .`` beside the other ``tui``: setuptools' finder maps one name, so the
    other project's ``tui`` is still the one ``import tui`` gives."""
    py = _editable_beside_a_foreign_tui(tmp_path)
    probe = (
        "import importlib.util, tui\n"
        "print(tui.OWNER)\n"
        "print(importlib.util.find_spec('ibdtool.parsers.page').origin)\n"
    )
    seen = subprocess.run(
        [py, "-c", probe], capture_output=True, text=True, check=False, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert seen.returncode == 0, seen.stderr
    owner, origin = seen.stdout.splitlines()
    assert owner == "the other tui project"
    assert Path(origin).resolve() == (REPO / "parsers" / "page.py").resolve()


START_PROBE = """
import sys
at_start = sorted(m for m in sys.modules if m in ("pathlib", "urllib.parse", "ipaddress")
                  or "editable" in m)
finders = [f for f in sys.meta_path if "Editable" in repr(f)]
import importlib.util, tui
print(tui.OWNER)
print(importlib.util.find_spec("ibdtool.parsers.page").origin)
print(" ".join(at_start) or "-", len(finders))
"""


def test_setup_makes_the_editable_install_a_path_entry(tmp_path: Path) -> None:
    """``scripts/setup.sh`` turns the editable install's finder into a plain path entry
    (scripts/editable_path.py): the venv's Python then starts without importing the finder or
    pathlib, still maps one name (the other project's ``tui`` is the one ``import tui`` gives)
    and still runs the checkout's modules. The finder's own start is the oracle of the first
    probe (it imports both), pip's uninstall of the second (the path entry goes with it)."""
    py = _editable_beside_a_foreign_tui(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def probe() -> list[str]:
        seen = subprocess.run(
            [py, "-c", START_PROBE], capture_output=True, text=True, check=False,
            cwd=tmp_path, env=env,
        )  # fmt: skip
        assert seen.returncode == 0, seen.stderr
        return seen.stdout.splitlines()

    page = (REPO / "parsers" / "page.py").resolve()
    owner, origin, loaded = probe()
    assert (owner, Path(origin).resolve()) == ("the other tui project", page)
    assert loaded != "- 0"  # the finder's start: it and pathlib imported, in sys.meta_path
    line = next(line for line in (REPO / "scripts" / "setup.sh").read_text().splitlines()
                if "editable_path.py" in line and not line.lstrip().startswith("#"))  # fmt: skip
    subprocess.run(
        ["bash", "-c", line.replace(".venv/bin/python", str(py))],
        check=True, cwd=REPO, env=env,
    )  # fmt: skip
    owner, origin, loaded = probe()
    assert (owner, Path(origin).resolve()) == ("the other tui project", page)
    assert loaded == "- 0"
    subprocess.run(
        [py, "-m", "pip", "uninstall", "-q", "-y", "ibdtool"],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    gone = subprocess.run(
        [py, "-c", "import ibdtool"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert "No module named 'ibdtool'" in gone.stderr
