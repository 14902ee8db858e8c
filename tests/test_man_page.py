"""ibdtool(1): the committed page is what ``scripts/gen_man.py`` builds from README, docs/ and
--help today, groff reads it without a warning, and ``ibdtool man`` prints it."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess

import pytest

from tests.catalog import REPO
from tests.cli_runner import run_ibdtool

PAGE = REPO / "ibdtool" / "cli" / "ibdtool.1"


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_man", REPO / "scripts" / "gen_man.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_a_fresh_build() -> None:
    fresh = _generator().render()
    assert PAGE.read_text(encoding="utf-8") == fresh, (
        "ibdtool/cli/ibdtool.1 is stale: run python scripts/gen_man.py"
    )


def test_every_command_and_doc_page_is_in_it() -> None:
    text = PAGE.read_text(encoding="utf-8")
    listed = run_ibdtool("--help").stdout.split("Commands:", 1)[1]
    for name in re.findall(r"^  (\S+)", listed, flags=re.M):
        assert f'.SS "ibdtool {name}"'.replace("-", "\\-") in text, name  # roff escapes "-"
    for page in _generator().doc_pages():
        title = page.read_text().splitlines()[0].lstrip("# ").replace("`", "").upper()
        heading = '.SH "' + title.replace("-", "\\-") + '"'
        assert heading in text, page


def test_groff_reads_it_without_a_warning() -> None:
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    done = subprocess.run(
        [groff, "-man", "-Tutf8", "-ww", "-z", str(PAGE)], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_ibdtool_man_prints_it() -> None:
    done = run_ibdtool("man")
    assert done.returncode == 0, done.stderr
    assert done.stdout == PAGE.read_text(encoding="utf-8")
