"""Percona Server: MySQL's format and statements, told apart by ``@@version_comment``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ibdtool.server.dialects.mysql import MySQL


@dataclass(frozen=True)
class Percona(MySQL):
    product: ClassVar[str] = "Percona Server"

    @classmethod
    def claims(cls, version: str, comment: str) -> bool:
        return "percona" in comment.lower()
