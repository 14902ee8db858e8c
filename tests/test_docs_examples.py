"""The README and docs/ as printed: every example is run, every relative link leads somewhere.

An example is a fenced ``console`` block: lines starting ``$ `` are commands, the lines after each
one are what it prints (stdout and stderr together, as a terminal shows them). Each command runs
in ``bash`` from the repository root, with ``ibdtool`` on ``PATH`` running this tree, ``TMPDIR``
a fresh directory, and its output is compared line by line (trailing spaces aside) with what
the page shows. What legitimately differs between machines is written ``…`` in the page
(allocated sizes: git keeps no holes, so a clone's samples are allocated whole and a punched
copy is not; CPU timings; temporary names): on a line holding ``…``, each ``…`` matches any text
and a run of two or more spaces matches any run of spaces (a table realigns when such a value's
width changes). Every other line must be equal. Commands that need a live server or ssh are
shown in ``sh`` blocks without output and are not run; the pages say so.

The expected output is what the pages show: a change of behaviour has to be a change of the
documentation too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.catalog import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
WILDCARD = "…"


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # 1-based line of the command in the page
    command: str
    output: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


@dataclass(frozen=True)
class Fence:
    info: str
    start: int  # 1-based line of the first line inside the fence
    lines: tuple[str, ...]


def fences(text: str) -> list[Fence]:
    """The fenced code blocks of a markdown page (``` fences, as the pages use)."""
    found: list[Fence] = []
    info: str | None = None
    start = 0
    body: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if info is None:
            if line.startswith("```"):
                info, start, body = line[3:].strip(), number + 1, []
        elif line.startswith("```"):
            found.append(Fence(info, start, tuple(body)))
            info = None
        else:
            body.append(line)
    assert info is None, f"a fence opened at line {start - 1} is never closed"
    return found


def examples(page: Path) -> list[Example]:
    found: list[Example] = []
    for fence in fences(page.read_text()):
        if fence.info.split()[:1] != ["console"]:
            continue
        command: tuple[int, str] | None = None
        output: list[str] = []
        for offset, line in enumerate(fence.lines):
            if line.startswith("$ "):
                if command is not None:
                    found.append(Example(page, command[0], command[1], tuple(output)))
                command, output = (fence.start + offset, line[2:]), []
            else:
                assert command is not None, f"{page}:{fence.start}: output before any command"
                output.append(line)
        assert command is not None, f"{page}:{fence.start}: a console block without a command"
        found.append(Example(page, command[0], command[1], tuple(output)))
    return found


ALL_EXAMPLES = [example for page in PAGES for example in examples(page)]


def line_matches(expected: str, actual: str) -> bool:
    if WILDCARD not in expected:
        return expected == actual
    literal = [re.sub(r"\\ (?:\\ )+", " +", re.escape(part)) for part in expected.split(WILDCARD)]
    return re.fullmatch(".*".join(literal), actual) is not None


def _trimmed(lines: list[str] | tuple[str, ...]) -> list[str]:
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def test_the_pages_have_examples() -> None:
    """A guard for the collector: README shows one example per command it runs on the samples."""
    readme = [e.command.split()[1] for e in ALL_EXAMPLES if e.page.name == "README.md"]
    for command in ("inspect", "pages", "page", "checksum", "sdi", "records", "simulate"):
        assert command in readme, f"README has no example of ibdtool {command}"
    assert {"report", "copy"} <= set(readme)


def test_no_example_hides_in_another_block() -> None:
    """An ``$ ibdtool`` line outside a console block would never be run."""
    for page in PAGES:
        for fence in fences(page.read_text()):
            if fence.info.split()[:1] != ["console"]:
                stray = [line for line in fence.lines if line.startswith("$ ")]
                assert not stray, f"{page}:{fence.start}: {stray[0]!r} is not in a console block"


def test_line_matching_is_narrow() -> None:
    assert line_matches("Disk  464.0 KiB → … allocated", "Disk  464.0 KiB → 452.0 KiB allocated")
    assert line_matches("a  … b", "a 12 b")
    assert not line_matches("a  … b", "a 12 c")
    assert not line_matches("Format  MySQL 8", "Format  MySQL 9")
    assert not line_matches("x 1 … y", "x 2 3 y")


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with an ``ibdtool`` that runs this tree, first on the examples' PATH."""
    where = tmp_path_factory.mktemp("bin")
    script = where / "ibdtool"
    script.write_text(f'#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m ibdtool.cli "$@"\n')
    script.chmod(0o755)
    return where


@pytest.mark.parametrize("example", ALL_EXAMPLES, ids=lambda e: e.id)
def test_example_prints_what_the_page_shows(
    example: Example, bin_dir: Path, tmp_path: Path
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"COLUMNS", "LINES", "NO_COLOR", "PYTHONPATH"} and not k.startswith("MYSQL")
    }
    env.update(PATH=f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}", TMPDIR=str(tmp_path))
    done = subprocess.run(
        ["bash", "-c", example.command],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    expected, actual = _trimmed(example.output), _trimmed(done.stdout.splitlines())
    shown = "\n".join(actual)
    assert len(actual) == len(expected), f"{example.id}: {example.command}\nprinted:\n{shown}"
    for number, (want, got) in enumerate(zip(expected, actual, strict=True), 1):
        assert line_matches(want, got), (
            f"{example.id}: {example.command}\noutput line {number}:\n"
            f"  page:    {want}\n  printed: {got}\nprinted:\n{shown}"
        )


# --- links -------------------------------------------------------------------------------------

_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _prose(text: str) -> str:
    """The page without its fenced blocks and inline code, where brackets are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found: set[str] = set()
    for line in _prose_lines_with_headings(page.read_text()):
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", line.lstrip("#").strip())
        slug = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


def _prose_lines_with_headings(text: str) -> list[str]:
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return [line for line in text.splitlines() if re.match(r"#{1,6} ", line)]


def test_anchor_rule() -> None:
    page = REPO / "docs" / "inspect.md"
    assert "inspect---json" in anchors(page)  # "## `inspect --json`", as GitHub spells it


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_lead_somewhere(page: Path) -> None:
    broken = []
    for target in _LINK.findall(_prose(page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_ci_runs_the_readmes_test_command() -> None:
    """``.ci/run`` runs the README's test command (setup, then pytest), so the two stay in step."""
    readme = (REPO / "README.md").read_text()
    command = re.search(
        r"^(scripts/setup\.sh --test) && (\.venv/bin/python -m pytest)", readme, re.M
    )
    assert command is not None, "README's second command is not where it was"
    ci = (REPO / ".ci" / "run").read_text()
    for part in command.groups():
        assert re.search(rf"^{re.escape(part)}\b", ci, re.M), f".ci/run does not run {part}"


_TREE = ("parsers/", "ibdtool/", "tui/", "tests/", "bench/", "scripts/", "samples/", "docs/")


def _expand(path: str) -> list[str]:
    """``a/{b,c}.py`` as the shell expands it."""
    brace = re.search(r"\{([^{}]*)\}", path)
    if brace is None:
        return [path]
    head, tail = path[: brace.start()], path[brace.end() :]
    return [full for alt in brace.group(1).split(",") for full in _expand(head + alt + tail)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_files_the_prose_names_exist(page: Path) -> None:
    """A module or file named in the text (``ibdtool/cli/main.py``) is where the text says: code
    moves, and the pages must follow it."""
    missing = []
    prose = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    for code in re.findall(r"`([^`\n]+)`", prose):
        if not code.startswith(_TREE) or " " in code:
            continue
        for path in _expand(code):
            if not any(c in path for c in "*<") and not (REPO / path).exists():
                missing.append(path)
    assert not missing, f"{page.relative_to(REPO)} names files that do not exist: {missing}"


def test_the_readme_stays_short() -> None:
    """Issue 19: a README a newcomer finishes; the reference belongs in docs/."""
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines < 300, f"README.md has {lines} lines: move reference text to docs/"
