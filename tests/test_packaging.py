"""Building ibdtool's wheel says nothing alarming and declares its licence the PEP 639 way.

Oracle: setuptools itself (the version ``pyproject.toml``'s ``build-system`` asks for, in pip's
isolated build environment, as ``scripts/setup.sh`` installs it): the build prints no
deprecation warning, and the wheel's METADATA carries ``License-Expression: MIT`` and the
LICENSE file.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.catalog import REPO


def test_wheel_builds_without_warnings_with_an_spdx_licence(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Deprecat" not in res.stdout + res.stderr, (res.stdout + res.stderr)[-3000:]
    (wheel,) = tmp_path.glob("ibdtool-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = zf.read(meta).decode()
    assert "License-Expression: MIT" in text.splitlines()
    assert "License-File: LICENSE" in text.splitlines()
    assert any(n.endswith("licenses/LICENSE") for n in names)
