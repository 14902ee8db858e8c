"""Shared fixtures: the corpus and samples locations, sparse copies of real files, the
throwaway servers (tests/server_fixtures.py, loaded here as a plugin); a guard that no test
leaves Ctrl-C ignored in the test process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.catalog import CORPUS, REPO

SAMPLES = REPO / "samples"
#: the throwaway-server fixtures, defined once for every module (see tests/server_fixtures.py)
pytest_plugins = ("tests.server_fixtures",)


def require_corpus() -> Path:
    if not (CORPUS / "CATALOG.md").is_file():
        pytest.fail(f"the corpus is missing: expected {CORPUS} (../shared/corpus of the repo)")
    return CORPUS


def corpus_file(rel: str) -> Path:
    """A real corpus file; the test fails (never skips) when the corpus is not there."""
    path = require_corpus() / rel
    if not path.is_file():
        pytest.fail(f"corpus file {path} is missing")
    return path


def _ctrl_c_back(item: pytest.Item, phase: str) -> None:
    """A test that leaves SIGINT ignored in this process (suspected in one full run) passes the
    ignored disposition to every ibdtool a later test starts, which then cannot be interrupted
    (Python keeps an inherited SIG_IGN): put Ctrl-C back and name the test."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        warnings.warn(f"{item.nodeid} ({phase}) left SIGINT ignored; restored", stacklevel=1)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    finally:
        _ctrl_c_back(item, "setup")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    finally:
        _ctrl_c_back(item, "call")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    finally:
        _ctrl_c_back(item, "teardown")


@pytest.fixture(scope="session")
def corpus() -> Path:
    return require_corpus()


def sparse_copy(src: Path, dst: Path) -> Path:
    """``cp --sparse=always``: git keeps no holes, so recreate them from the zero blocks."""
    if shutil.which("cp") is None:
        pytest.fail("cp (coreutils) is needed")
    subprocess.run(["cp", "--sparse=always", str(src), str(dst)], check=True)
    # written back before anyone reads st_blocks: with delayed allocation the count of a file
    # still in the page cache is a reservation, not the extents (and their tree block) it gets
    fd = os.open(dst, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return dst
