"""Start-up: a command imports only what it uses.

``inspect --json`` is what scripts run over many files; it must not pay for the Textual UI,
the MySQL client or Rich's tables. Checked in a fresh interpreter's ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import SAMPLES

PROBE = """
import sys
from ibdtool.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"rich", "textual", "pymysql"})
print(code, " ".join(heavy) or "-", file=sys.stderr)
"""


def _heavy(*args: str) -> tuple[int, list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True
    )
    code, heavy = done.stderr.strip().splitlines()[-1].split(" ", 1)
    return int(code), [] if heavy == "-" else heavy.split(), done.stdout


def test_inspect_json_imports_no_ui_and_no_client() -> None:
    path = SAMPLES / "mariadb" / "p16k-pc_zlib.ibd"
    code, heavy, out = _heavy("inspect", "--json", str(path))
    assert code == 0
    assert json.loads(out)["pages"] == path.stat().st_size // 16384
    assert heavy == []


def test_the_probe_sees_what_a_table_imports() -> None:
    """The same probe on ``inspect`` without --json finds Rich (so it can fail)."""
    code, heavy, _ = _heavy("inspect", str(SAMPLES / "mariadb" / "p16k-pc_zlib.ibd"))
    assert code == 0
    assert "rich" in heavy


def test_pages_json_imports_no_rich() -> None:
    path = SAMPLES / "mariadb" / "p16k-pc_zlib.ibd"
    code, heavy, out = _heavy("pages", "--json", str(path))
    assert code == 0
    assert len(out.splitlines()) == path.stat().st_size // 16384
    assert heavy == []
