"""The import graph of parsers, ibdtool and tui: its circles, the groups' doors, a picture.

Built by grimp (import-linter's graph library), which sees every import: at module level, in
functions (the lazy ones) and under ``TYPE_CHECKING``. ``tests/test_layout.py`` runs the same
checks; this prints them.

    python scripts/import_graph.py            # circles (none, or each with its edges) and
                                              # imports that pass a group's __init__ by
    python scripts/import_graph.py --groups   # DOT of which group uses which
    python scripts/import_graph.py --dot      # DOT of every module
    ... --dot | dot -Tsvg > imports.svg       # (Graphviz) to look at it

A group is a subpackage of ``ibdtool`` (``fs``, ``tablespace``, ``advise``, ``copy``,
``report``, ``server``, ``present``, ``cli``); a module outside a group imports from the
group's ``__init__`` only, never one of its modules (``from ibdtool.tablespace import
Tablespace``, not ``from ibdtool.tablespace.reader import ...``). ``parsers`` and ``tui`` are
layers of their own, ``ibdtool.errors``, ``ibdtool.workers`` and ``ibdtool.exports`` are shared
by all.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: one root: parsers/ and tui/ are ibdtool.parsers and ibdtool.tui (docs/layout.md), found
#: through the links ibdtool/parsers and ibdtool/tui (grimp follows links)
PACKAGES = ("ibdtool",)
GROUPS = ("fs", "tablespace", "advise", "copy", "report", "server", "present", "cli")


def build() -> Any:
    """The grimp graph of this tree's packages (not the installed ones)."""
    import grimp

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def edges(graph: Any) -> dict[str, set[str]]:
    """Module -> the modules of these packages it imports."""
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}


def group_of(module: str) -> str:
    """``ibdtool.<group>`` for a module of a group, else the module's top package, or the
    module itself for ``ibdtool``'s shared modules."""
    parts = module.split(".")
    if parts[0] == "ibdtool" and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0]


def cycles(graph_edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (each a circle of imports),
    sorted; Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph_edges:
        if root in index:
            continue
        work = [(root, iter(sorted(graph_edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph_edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def side_doors(graph_edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) where a module outside a group imports one of the group's modules
    instead of the group's ``__init__``."""
    out = []
    for importer, imported in sorted(graph_edges.items()):
        for target in sorted(imported):
            group = group_of(target)
            in_group = group.startswith("ibdtool.") and group.split(".")[-1] in GROUPS
            if in_group and target != group and group_of(importer) != group:
                out.append((importer, target))
    return out


def dot(pairs: Iterable[tuple[str, str]], name: str) -> str:
    lines = [f"digraph {name} {{", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
    lines += [f'  "{a}" -> "{b}";' for a, b in pairs]
    return "\n".join([*lines, "}"]) + "\n"


def main(argv: list[str]) -> int:
    graph_edges = edges(build())
    if "--dot" in argv:
        pairs = [(a, b) for a, bs in graph_edges.items() for b in sorted(bs)]
        sys.stdout.write(dot(pairs, "modules"))
        return 0
    if "--groups" in argv:
        pairs = sorted(
            {
                (group_of(a), group_of(b))
                for a, bs in graph_edges.items()
                for b in bs
                if group_of(a) != group_of(b)
            }
        )
        sys.stdout.write(dot(pairs, "groups"))
        return 0
    found = cycles(graph_edges)
    for component in found:
        print(f"circle of {len(component)}:")
        for module in component:
            inside = sorted(graph_edges[module] & set(component))
            print(f"  {module} -> {', '.join(inside)}")
    doors = side_doors(graph_edges)
    for importer, target in doors:
        print(f"side door: {importer} imports {target}")
    if not found and not doors:
        print(f"no circles and no side doors among {len(graph_edges)} modules")
    return 1 if found or doors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
