"""The engine's layout holds: no import circles, groups entered through their ``__init__``, and
each group's offer the same for type checkers and at run time, imported only when used.

The graph is grimp's (import-linter's library), which sees lazy imports in functions and those
under ``TYPE_CHECKING`` too; ``scripts/import_graph.py`` prints the same findings and draws the
graph (docs/layout.md). The contracts in pyproject (``lint-imports``) state which group may use
which.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

# scripts/ is not a package: load the graph helper by path, under a name of its own
_spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
assert _spec is not None and _spec.loader is not None
ig = sys.modules.setdefault("import_graph", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(ig)

#: the groups whose __init__ offers names lazily (cli is a front end: nothing imports it)
OFFERING = [g for g in ig.GROUPS if g != "cli"]


@cache
def _edges() -> dict[str, set[str]]:
    return ig.edges(ig.build())


def test_no_import_circles() -> None:
    assert ig.cycles(_edges()) == []


def test_the_cycle_finder_finds_circles() -> None:
    """The finder, on a made-up graph with two circles and a tail, finds exactly those."""
    made_up = {
        "a": {"b"},
        "b": {"c"},
        "c": {"a", "d"},
        "d": set(),
        "e": {"f"},
        "f": {"e", "d"},
    }
    assert ig.cycles(made_up) == [["a", "b", "c"], ["e", "f"]]


def test_groups_are_entered_through_their_init() -> None:
    assert ig.side_doors(_edges()) == []


def test_a_side_door_is_seen() -> None:
    made_up = {
        "ibdtool.cli.main": {"ibdtool.tablespace.reader", "ibdtool.tablespace"},
        "ibdtool.tablespace.inspect": {"ibdtool.tablespace.reader"},
        "tui.app": {"ibdtool.fs.opening"},
    }
    assert ig.side_doors(made_up) == [
        ("ibdtool.cli.main", "ibdtool.tablespace.reader"),
        ("tui.app", "ibdtool.fs.opening"),
    ]


def _type_checking_offer(group: str) -> dict[str, str]:
    """name -> module of the imports in the ``if TYPE_CHECKING:`` block of the group's
    ``__init__``."""
    tree = ast.parse((ROOT / "ibdtool" / group / "__init__.py").read_text())
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    ]
    assert len(blocks) == 1, f"ibdtool.{group}: one `if TYPE_CHECKING:` block of its offer"
    offer = {}
    for node in blocks[0].body:
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        assert node.module.startswith(f"ibdtool.{group}.")
        for alias in node.names:
            assert alias.asname is None
            offer[alias.name] = node.module
    return offer


@pytest.mark.parametrize("group", OFFERING)
def test_a_groups_offer_is_the_same_for_type_checkers_and_at_run_time(group: str) -> None:
    package: Any = importlib.import_module(f"ibdtool.{group}")
    offer = _type_checking_offer(group)
    assert dir(package) == sorted(offer)
    for name, module in offer.items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError):
        _ = package.no_such_name


@pytest.mark.parametrize("group", OFFERING)
def test_importing_a_group_imports_none_of_its_modules(group: str) -> None:
    """A group's ``__init__`` costs nothing at start-up: its modules load when a name they
    hold is first used."""
    probe = (
        f"import sys, ibdtool.{group}\n"
        f"print(' '.join(m for m in sys.modules if m.startswith('ibdtool.{group}.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.split() == []


def test_no_group_module_shares_a_name_with_its_offer() -> None:
    """Importing a group's module sets the package attribute of that name to the module, so
    a name offered under a module's name would turn into the module."""
    for group in OFFERING:
        modules = {p.stem for p in (ROOT / "ibdtool" / group).iterdir() if p.suffix == ".py"}
        modules |= {p.name for p in (ROOT / "ibdtool" / group).iterdir() if p.is_dir()}
        assert not modules & set(_type_checking_offer(group)), group
