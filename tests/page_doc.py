"""``ibdtool page --json`` for the tests: the document, and the index header fields in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli_runner import run_ibdtool


def page_doc(path: Path, n: int, *extra: str) -> dict[str, Any]:
    """``ibdtool page --json PATH N EXTRA…``, which must succeed, as a dict."""
    r = run_ibdtool("page", "--json", str(path), str(n), *extra)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def index_header_fields(doc: dict[str, Any]) -> dict[str, str]:
    """The index page header of the decoded page, by name (the values the server wrote)."""
    return {
        f["name"]: f["value"]
        for g in doc["logical"]["groups"]
        if g["title"].startswith("Index page header")
        for f in g["fields"]
        if f["name"] in ("PAGE_N_RECS", "PAGE_LEVEL", "PAGE_N_HEAP", "PAGE_N_DIR_SLOTS")
    }
