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
        "ibdtool.tui.app": {"ibdtool.fs.opening"},
    }
    assert ig.side_doors(made_up) == [
        ("ibdtool.cli.main", "ibdtool.tablespace.reader"),
        ("ibdtool.tui.app", "ibdtool.fs.opening"),
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


# scripts/namespace_imports.py, loaded by path as the graph helper is
_ns_spec = importlib.util.spec_from_file_location(
    "namespace_imports", ROOT / "scripts" / "namespace_imports.py"
)
assert _ns_spec is not None and _ns_spec.loader is not None
ns = sys.modules.setdefault("namespace_imports", importlib.util.module_from_spec(_ns_spec))
_ns_spec.loader.exec_module(ns)


def test_parsers_and_tui_are_seen_under_ibdtool() -> None:
    """The graph (as lint-imports builds it) holds every module of the two folders under its
    installed name (docs/layout.md, "Installed names"), and no other root."""
    modules = set(_edges())
    for folder in ("parsers", "tui"):
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            assert ".".join(("ibdtool", folder, *parts)) in modules, path
    assert {m.split(".")[0] for m in modules} == {"ibdtool"}


def test_parsers_use_nothing_of_ibdtool_but_themselves() -> None:
    edges = _edges()
    outside = {
        (m, t)
        for m, targets in edges.items()
        if m.startswith("ibdtool.parsers")
        for t in targets
        if not (t == "ibdtool.parsers" or t.startswith("ibdtool.parsers."))
    }
    assert outside == set()


def test_no_reference_to_the_old_top_level_names() -> None:
    """An import of the old top-level names, or a dotted name of one of their modules, left
    anywhere: ``python scripts/namespace_imports.py`` rewrites them."""
    rules = ns.patterns(ROOT)
    left = [
        str(p.relative_to(ROOT))
        for p in ns.files(ROOT)
        if (text := p.read_bytes().decode("utf-8", "replace")) != ns.rewrite(text, rules)
    ]
    assert left == []


def test_the_rewrite_changes_module_references_only() -> None:
    """On a made-up text: imports and dotted names of real modules change, once; a table named
    ``tui.orders``, paths, the ``ibdtool tui`` command and ``ibdtool.cli.tui`` do not."""
    # the old names spelled {p} and {t}, so that the rewrite leaves this test as it is
    before = (
        "from {p}.page import decode_page\n"
        "    from {t} import app\n"
        "import {p}.pages\n"
        "x = {p}.pages.PAGE_FAMILIES  # :mod:`{p}` and :func:`~{t}.app.create_app`\n"
        'make_table(db, "tui", "orders"); by_name["tui.orders"]\n'
        "see tui/app.py, docs/tui.md, ibdtool.cli.tui and `ibdtool tui` (tui.py)\n"
    ).format(p="parsers", t="tui")
    after = (
        "from ibdtool.parsers.page import decode_page\n"
        "    from ibdtool.tui import app\n"
        "import ibdtool.parsers.pages\n"
        "x = ibdtool.parsers.pages.PAGE_FAMILIES  # :mod:`ibdtool.parsers` and"
        " :func:`~ibdtool.tui.app.create_app`\n"
        'make_table(db, "tui", "orders"); by_name["tui.orders"]\n'
        "see tui/app.py, docs/tui.md, ibdtool.cli.tui and `ibdtool tui` (tui.py)\n"
    )
    rules = ns.patterns(ROOT)
    assert ns.rewrite(before, rules) == after
    assert ns.rewrite(after, rules) == after


def test_a_line_grown_too_long_is_rewrapped_in_its_paragraph() -> None:
    """The longer names push docstring and comment lines past the limit: each is wrapped into
    its paragraph, a trailing comment moves above its code, and no line is left too long."""
    old = (
        "def f() -> None:\n"
        '    """Reads :mod:`{p}.page` and :mod:`{p}.codecs` and :mod:`{p}.envelope`, then\n'
        "    the rest.\n"
        "\n"
        "    - an item\n"
        '    """\n'
        "    # first line of a comment naming {p}.pagecolumns and {p}.page and {p}.cfg\n"
        "    # second line\n"
        "    x = 1  # {p}.keyring loads construct and cryptography: only with --keyring, ok\n"
    ).format(p="parsers")
    new = ns.rewrap(old, ns.rewrite(old, ns.patterns(ROOT)), 80)
    assert all(len(line) <= 80 for line in new.splitlines()), new
    rewritten = ns.rewrite(old, ns.patterns(ROOT))
    words = sorted(w for w in new.split() if w != "#")
    assert words == sorted(w for w in rewritten.split() if w != "#")  # the same words
    assert "\n    - an item\n" in new  # an item is not joined to the paragraph above
    assert new.index("# ibdtool.parsers.keyring") < new.index("x = 1")
    compile(new, "made-up", "exec")


@pytest.mark.parametrize(
    ("package", "module"), [("parsers", ""), ("parsers", "page"), ("tui", ""), ("tui", "shown")]
)
def test_the_old_names_refuse_to_import(package: str, module: str) -> None:
    """With the checkout's root on sys.path (as the tests run), ``import parsers`` would load a
    second copy of every module: it stops with ImportError, naming the right one."""
    old = ".".join(filter(None, (package, module)))  # spelled apart: the rewrite leaves them
    probe = f"import importlib; importlib.import_module({old!r})"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert done.returncode == 1
    assert f"ImportError: import ibdtool.{package}, not {package} " in done.stderr
