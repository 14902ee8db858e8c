#!/usr/bin/env python3
"""Write ibdtool(1), ``ibdtool/cli/ibdtool.1``, from the text the README, docs/ and --help hold.

One source: NAME and DESCRIPTION are the README's opening (up to its first ``##`` section),
COMMANDS is every command's usage, help and options as click declares them, and the sections
after it are the pages of ``docs/`` in the order ``docs/README.md``'s table lists them. Markdown
is parsed with markdown-it-py and written as man(7) roff: headings become ``.SH``/``.SS``,
lists ``.IP``, code blocks ``.nf``, tables one tagged paragraph per row. Nothing in the output
depends on the date or the machine, so ``tests/test_man_page.py`` can compare the committed
page with a fresh build. Run from anywhere: ``python scripts/gen_man.py`` (``--check`` only
compares, exit 1 when the committed page is stale).
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import click
from markdown_it import MarkdownIt
from markdown_it.token import Token

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ibdtool.cli.main import main as cli  # noqa: E402

OUT = REPO / "ibdtool" / "cli" / "ibdtool.1"
WIDTH = 78  # click's help is laid out for this width where it lays anything out


def escape(text: str) -> str:
    """Text for roff: backslashes escaped, hyphens as minus signs (options are copied)."""
    return text.replace("\\", "\\e").replace("-", "\\-")


def line_safe(text: str) -> str:
    """A line roff will not read as a request (a leading ``.`` or ``'``)."""
    return "\\&" + text if text.startswith((".", "'")) else text


class Roff:
    """markdown-it tokens to man(7) requests."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def request(self, line: str) -> None:
        self.out.append(line)

    def text(self, text: str) -> None:
        for line in text.split("\n"):
            line = line.strip()
            if line:
                self.out.append(line_safe(line))

    def inline(self, token: Token) -> str:
        parts: list[str] = []
        for child in token.children or []:
            kind = child.type
            if kind == "text":
                parts.append(escape(child.content))
            elif kind == "code_inline":
                parts.append("\\fB" + escape(child.content) + "\\fR")
            elif kind in ("strong_open", "strong_close"):
                parts.append("\\fB" if kind.endswith("open") else "\\fR")
            elif kind in ("em_open", "em_close"):
                parts.append("\\fI" if kind.endswith("open") else "\\fR")
            elif kind == "softbreak":
                parts.append("\n")
            elif kind == "hardbreak":
                parts.append("\n.br\n")
            # link_open/close: the text stays, the target (another page, an anchor) goes
        return "".join(parts)

    def markdown(self, source: str, top: str = ".SH", sub: str = ".SS") -> None:
        tokens = MarkdownIt("commonmark").enable("table").parse(source)
        list_kinds: list[str] = []
        numbers: list[int] = []
        in_item = 0
        i = 0
        while i < len(tokens):
            token = tokens[i]
            kind = token.type
            if kind == "heading_open":
                # a heading's words only: man sets its own font there
                plain = "".join(
                    c.content for c in tokens[i + 1].children or [] if c.content
                ).replace('"', "'")
                title = escape(plain.upper() if token.tag == "h1" else plain)
                self.request(f'{top if token.tag == "h1" else sub} "{title}"')
                i += 3
                continue
            if kind == "paragraph_open":
                children = tokens[i + 1].children or []
                if children and all(c.type in ("image", "softbreak") for c in children):
                    i += 3  # a picture: the man page has none
                    continue
                if not (in_item and tokens[i - 1].type == "list_item_open"):
                    self.request(".PP" if not in_item else ".IP")
                self.text(self.inline(tokens[i + 1]))
                i += 3
                continue
            if kind in ("bullet_list_open", "ordered_list_open"):
                list_kinds.append(kind)
                numbers.append(int(token.attrGet("start") or 1))
            elif kind in ("bullet_list_close", "ordered_list_close"):
                list_kinds.pop()
                numbers.pop()
            elif kind == "list_item_open":
                in_item += 1
                if list_kinds[-1] == "bullet_list_open":
                    self.request(".IP \\(bu 2")
                else:
                    self.request(f".IP {numbers[-1]}. 4")
                    numbers[-1] += 1
            elif kind == "list_item_close":
                in_item -= 1
            elif kind in ("fence", "code_block"):
                self.request(".PP" if not in_item else ".IP")
                self.request(".RS 2")
                self.request(".nf")
                for line in token.content.rstrip("\n").split("\n"):
                    self.out.append(line_safe(escape(line)))
                self.request(".fi")
                self.request(".RE")
            elif kind == "table_open":
                i = self.table(tokens, i)
                continue
            i += 1

    def table(self, tokens: list[Token], i: int) -> int:
        """One tagged paragraph per row: the first cell, then ``header: cell`` for the rest."""
        header: list[str] = []
        rows: list[list[str]] = []
        row: list[str] = []
        while tokens[i].type != "table_close":
            kind = tokens[i].type
            if kind == "tr_open":
                row = []
            elif kind == "inline":
                row.append(self.inline(tokens[i]).replace("\n", " ").strip())
            elif kind == "tr_close":
                if header:
                    rows.append(row)
                else:
                    header = row
            i += 1
        for cells in rows:
            self.request(".TP")
            self.text(cells[0] or "\\&")
            rest = cells[1:]
            if len(rest) == 1:
                self.text(rest[0])
                continue
            for n, (name, cell) in enumerate(zip(header[1:], rest, strict=False)):
                if n:
                    self.request(".br")
                self.text(f"\\fI{name}\\fR: {cell}" if cell else f"\\fI{name}\\fR: \\(em")
        return i + 1


def commands(roff: Roff, group: click.Group, ctx: click.Context, prefix: str) -> None:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = click.Context(command, info_name=name, parent=ctx, terminal_width=WIDTH)
        roff.request(f'.SS "{escape(prefix + " " + name)}"')
        usage = " ".join(command.collect_usage_pieces(sub))
        roff.request(".PP")
        roff.text(f"\\fB{escape(prefix + ' ' + name)}\\fR {escape(usage)}")
        for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
            roff.request(".PP")
            if paragraph.startswith("\b\n"):  # click's mark for a paragraph kept as written
                roff.request(".nf")
                for line in paragraph[2:].split("\n"):
                    roff.out.append(line_safe(escape(line)))
                roff.request(".fi")
            else:
                roff.text(escape(" ".join(paragraph.split())))
        for param in command.get_params(sub):
            record = param.get_help_record(sub)
            if record is None:
                continue
            opts, help_text = record
            if not help_text:  # an argument: its place is in the usage line
                continue
            roff.request(".TP")
            roff.text(f"\\fB{escape(opts)}\\fR")
            roff.text(escape(" ".join(help_text.split())) or "\\&")
        if isinstance(command, click.Group):
            commands(roff, command, sub, f"{prefix} {name}")


def doc_pages() -> list[Path]:
    """The pages of docs/ in the order of the index's table (its first column's links)."""
    index = (REPO / "docs" / "README.md").read_text()
    names = re.findall(r"^\| \[[^\]]+\]\(([^)#]+\.md)\)", index, flags=re.M)
    return [REPO / "docs" / name for name in names]


def render() -> str:
    readme = (REPO / "README.md").read_text()
    opening = readme.split("\n## ", 1)[0]
    opening = re.sub(r"\A# ibdtool\n", "", opening)
    roff = Roff()
    roff.request('.TH IBDTOOL 1 "" "ibdtool" "ibdtool manual"')
    roff.request(".nh")  # no hyphenation: names and options are copied from here
    roff.request(".ad l")
    roff.request(".SH NAME")
    roff.text("ibdtool \\- see what an InnoDB tablespace really is on disk")
    roff.request(".SH SYNOPSIS")
    roff.request(".PP")
    roff.text("\\fBibdtool\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]...")
    roff.request(".SH DESCRIPTION")
    roff.markdown(opening, top=".SS", sub=".SS")
    roff.request(".SH COMMANDS")
    ctx = click.Context(cli, info_name="ibdtool", terminal_width=WIDTH)
    assert isinstance(cli, click.Group)
    commands(roff, cli, ctx, "ibdtool")
    for page in doc_pages():
        roff.markdown(page.read_text())
    roff.request(".SH SEE ALSO")
    roff.text("innochecksum(1), ibd2sdi(1), filefrag(8), mysql(1), mariadb(1)")
    text = "\n".join(roff.out) + "\n"
    # plain ASCII out: every other character as a groff Unicode escape, whatever the locale
    return "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in text)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        return 0 if OUT.is_file() and OUT.read_text(encoding="utf-8") == text else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
