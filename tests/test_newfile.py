"""``ibdtool.fs.creating.create_new``: new files only, never through a link, one-line refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ibdtool.errors import InputError
from ibdtool.fs.creating import create_new


def test_creates_once_and_refuses_what_exists(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    assert create_new(target, b"abc") == target
    assert target.read_bytes() == b"abc"
    with pytest.raises(InputError, match="already exists"):
        create_new(target, b"zzz")
    assert target.read_bytes() == b"abc"


def test_a_planted_link_is_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"secret")
    link = tmp_path / "link"
    os.symlink(victim, link)
    with pytest.raises(InputError, match="already exists"):
        create_new(link, b"x")
    dangling = tmp_path / "dangling"
    os.symlink(tmp_path / "nowhere", dangling)
    with pytest.raises(InputError):
        create_new(dangling, b"x")
    assert victim.read_bytes() == b"secret" and not (tmp_path / "nowhere").exists()


def test_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="No such file"):
        create_new(tmp_path / "no" / "such" / "x", b"x")
