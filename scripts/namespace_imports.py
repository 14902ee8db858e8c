"""Rewrite references to the top-level ``parsers`` and ``tui`` packages as ``ibdtool.parsers``
and ``ibdtool.tui``, the names they are installed under (docs/layout.md, "Installed names").

    python scripts/namespace_imports.py           # rewrite, print each changed line
    python scripts/namespace_imports.py --check   # print what would change; exit 1 if any

Idempotent: a rewritten reference is not matched again. It rewrites, in the ``.py``, ``.pyi``,
``.md``, ``.toml``, ``.cfg`` and ``.ini`` files of the tree (not ``.git``, venvs, caches, nor
the ``ibdtool/parsers`` and ``ibdtool/tui`` links):

- import statements at the start of a line: ``from parsers… import``, ``import tui…``;
- dotted names of a real module of the two packages anywhere (code, strings, docstrings,
  Markdown): ``parsers.cfg``, ``tui.app.create_app``, ``~parsers.errors.ParseError``. The
  modules are read from the folders, so ``tui.orders`` (a table in a test's schema), paths such
  as ``tui/app.py``, ``docs/tui.md`` and ``ibdtool.cli.tui`` are left alone;
- ``:mod:`parsers``` and ``:mod:`tui```.

Bare words (the folder names, ``ibdtool tui`` the command) stay. ``bench/RESULTS.md`` is a
record of past runs and keeps the names it was written with.

A comment or docstring line the longer names push past ruff's line length is re-wrapped into
the lines of its paragraph (a trailing comment moves above its code first); then ruff sorts
the imports of the changed files and formats them, so the tree lints as before, and
``scripts/gen_man.py`` builds the manual page from the docs again.
"""

from __future__ import annotations

import difflib
import io
import os
import re
import subprocess
import sys
import tokenize
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("parsers", "tui")
SUFFIXES = {".py", ".pyi", ".md", ".toml", ".cfg", ".ini"}
SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "build", "dist", "node_modules"}
#: relative paths never rewritten: this script (its examples), the record of past runs
KEEP = {"scripts/namespace_imports.py", "bench/RESULTS.md"}


def modules_of(root: Path, package: str) -> set[str]:
    """The names of the package's direct modules and subpackages, as the folder has them."""
    folder = root / package
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
    return names


def patterns(root: Path) -> list[tuple[re.Pattern[str], str]]:
    alternatives = "|".join(PACKAGES)
    rules = [
        # import statements: `from parsers.x import y`, `from tui import z`, `import parsers.x`
        (
            re.compile(rf"^(\s*(?:from|import)\s+)({alternatives})(?=[\s.]|$)", re.M),
            r"\1ibdtool.\2",
        ),
        (re.compile(rf":mod:`({alternatives})`"), r":mod:`ibdtool.\1`"),
    ]
    for package in PACKAGES:
        names = "|".join(sorted(map(re.escape, modules_of(root, package)), key=len, reverse=True))
        # not after a word character, a dot, a slash or a hyphen (paths, ibdtool.cli.tui,
        # an already rewritten ibdtool.tui.app)
        rules.append(
            (re.compile(rf"(?<![\w./-]){package}\.(?=(?:{names})\b)"), f"ibdtool.{package}.")
        )
    return rules


def files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):  # links to directories are not entered
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")
        )
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if path.suffix in SUFFIXES and path.relative_to(root).as_posix() not in KEEP:
                out.append(path)
    return out


def rewrite(text: str, rules: list[tuple[re.Pattern[str], str]]) -> str:
    for pattern, replacement in rules:
        text = pattern.sub(replacement, text)
    return text


def line_length(root: Path) -> int:
    with (root / "pyproject.toml").open("rb") as f:
        return int(tomllib.load(f).get("tool", {}).get("ruff", {}).get("line-length", 88))


#: a line that starts an item of its own, never joined to the line before
_ITEM = re.compile(r"^\s*(?:[-*+] |\d+[.)] |:\w|>>>|\.\. |#|\"\"\"|'\'\'|$)")


def _prose(lines: list[str]) -> dict[int, tuple[str, str, int]]:
    """Line index -> (kind, continuation prefix, docstring id) for the lines that are prose: a
    comment alone on its line ("comment"), a code line's trailing comment ("trailing", prefix
    the line's indent), a line of a triple-quoted string ("doc")."""
    out: dict[int, tuple[str, str, int]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("".join(lines)).readline))
    except (tokenize.TokenError, SyntaxError):
        return out
    for n, tok in enumerate(tokens):
        row, col = tok.start[0] - 1, tok.start[1]
        if tok.type == tokenize.COMMENT:
            indent = lines[row][: len(lines[row]) - len(lines[row].lstrip())]
            if lines[row][:col].strip():
                out[row] = ("trailing", indent, 0)
            else:
                prefix = re.match(r"#:? ?", tok.string)
                out[row] = ("comment", lines[row][:col] + (prefix.group() if prefix else "# "), 0)
        elif tok.type == tokenize.STRING and re.match(r"^[rRuU]?(\"\"\"|\'\'\')", tok.string):
            for r in range(row, tok.end[0]):
                indent = lines[r][: len(lines[r]) - len(lines[r].lstrip())]
                out.setdefault(r, ("doc", indent if r > row else " " * col, n))
    return out


def _wrap_once(lines: list[str], limit: int, todo: set[int]) -> bool:
    """Re-wrap the last too-long prose line among ``todo``; False when none is left. From the
    bottom up, so the lines a wrap adds move no line still to do."""
    prose = _prose(lines)
    for i in sorted(todo, reverse=True):
        line = lines[i].rstrip("\n")
        if len(line) <= limit or i not in prose:
            todo.discard(i)
            continue
        kind, prefix, doc = prose[i]
        if kind == "trailing":  # the comment to its own line above the code
            code, _, comment = line.partition("  #")
            if not comment:
                todo.discard(i)
                continue
            lines[i : i + 1] = [f"{prefix}#{comment}\n", code.rstrip() + "\n"]
            todo.discard(i)
            todo.update({i, i + 1})
            return True
        cut = line.rfind(" ", len(prefix) + 1, limit + 1)
        if cut <= len(prefix.rstrip()) or not line[:cut].strip():
            todo.discard(i)
            continue
        head, rest = line[:cut].rstrip(), line[cut + 1 :]
        nxt = lines[i + 1].rstrip("\n") if i + 1 < len(lines) else ""
        joinable = (
            i + 1 < len(lines)
            and (i + 1) in prose
            and prose[i + 1][0] == kind
            and prose[i + 1][2] == doc
            and nxt.startswith(prefix.rstrip())
            and not _ITEM.match(nxt[len(prefix) :] if kind == "comment" else nxt)
            and not rest.rstrip().endswith(('"""', "'''"))
        )
        if joinable:
            next_prefix = prose[i + 1][1]
            body = nxt[len(next_prefix) :] if nxt.startswith(next_prefix) else nxt.lstrip()
            lines[i : i + 2] = [head + "\n", f"{next_prefix}{rest} {body}\n"]
        else:
            lines[i : i + 1] = [head + "\n", f"{prefix}{rest}\n"]
        todo.discard(i)
        todo.add(i + 1)
        return True
    return False


def rewrap(old: str, new: str, limit: int) -> str:
    """``new`` with the prose lines that grew past ``limit`` re-wrapped."""
    old_lines, lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    todo = {
        i
        for i, line in enumerate(lines)
        if len(line.rstrip("\n")) > limit and (i >= len(old_lines) or old_lines[i] != line)
    }
    while _wrap_once(lines, limit, todo):
        pass
    return "".join(lines)


def tidy(root: Path, paths: list[Path]) -> None:
    """ruff: imports sorted again (``ibdtool.parsers`` now sorts among ``ibdtool``), then
    formatted; the manual page built again from the docs."""
    code = [str(p) for p in paths if p.suffix in (".py", ".pyi")]
    if code:
        ruff = [sys.executable, "-m", "ruff"]
        subprocess.run([*ruff, "check", "-q", "--select", "I", "--fix", *code], check=False)
        subprocess.run([*ruff, "format", "-q", *code], check=False)
    gen_man = root / "scripts" / "gen_man.py"
    if gen_man.is_file():  # the docs (docs/layout.md too) may have changed before this run
        subprocess.run([sys.executable, str(gen_man)], check=False)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    root = ROOT
    rules = patterns(root)
    limit = line_length(root)
    changed_files = changed_lines = 0
    written: list[Path] = []
    for path in files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # not text: an InnoDB .cfg among the samples
            continue
        new = rewrite(text, rules)
        if new == text:
            continue
        if path.suffix in (".py", ".pyi"):
            new = rewrap(text, new, limit)
        changed_files += 1
        rel = path.relative_to(root)
        for group in difflib.SequenceMatcher(
            None, text.splitlines(), new.splitlines(), autojunk=False
        ).get_grouped_opcodes(0):
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    continue
                changed_lines += max(i2 - i1, j2 - j1)
                print(f"{rel}:{i1 + 1}:")
                for old_line in text.splitlines()[i1:i2]:
                    print(f"  - {old_line.strip()}")
                for new_line in new.splitlines()[j1:j2]:
                    print(f"  + {new_line.strip()}")
        if not check:
            path.write_text(new, encoding="utf-8")
            written.append(path)
    if not check:
        tidy(root, written)
    verb = "would change" if check else "changed"
    print(f"{verb} {changed_lines} lines in {changed_files} files", file=sys.stderr)
    return 1 if check and changed_files else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
