"""Escaping for the markdown memrun writes (compare, plan and sweep documents, the PR comments).

Every string that memrun did not write itself (dataset questions, answers, keys and
category labels, judge explanations, config names and values, warnings that quote them)
goes through one of these functions, chosen by where it stands:

- :func:`inline`: a line of text in a paragraph, a bullet or a heading;
- :func:`cell`: a GFM table cell (:func:`inline` plus ``|``);
- :func:`code_span` and :func:`fenced`: literal text in backticks or a fenced block;
- :func:`marker_name`: a name inside the hidden sticky-comment marker (``<!-- memrun-... -->``).

What each guarantees, wherever the text came from: it stays on its line (no newline reaches
the document), it cannot open or close markup around it (emphasis, links, images, code,
tables, HTML), it cannot write an HTML comment (so no second sticky marker) and it
mentions no one (``@`` is followed by a zero-width joiner, which GitHub does not read as a
mention, and which does not show). CommonMark backslash escapes and HTML entities render
as the original characters.
"""

from __future__ import annotations

import re

ZWJ = "\u200d"
"""Zero-width joiner: after ``@`` it stops a GitHub mention (``@everyone``, ``@org/team``)."""

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Characters that open or close inline markup (GFM and GitHub's math): escaped with a backslash.
# (A pipe only matters in a table row: :func:`cell`.)
_BACKSLASHED = set("\\`*[]~$#")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u0085\u2028\u2029]")
# Text at the start of a block that would make it a list, heading, quote or rule.
_BLOCK_START = re.compile(r"^(\d{1,9})([.)])")
_MARKER_UNSAFE = re.compile(r"[^A-Za-z0-9_.=/+:-]")


def one_line(text: object) -> str:
    """``text`` as one line: line breaks (CR, LF, U+2028/2029, NEL), tabs and other control
    characters become spaces."""
    return _CONTROL.sub(" ", str(text).replace("\r\n", " ").replace("\n", " ").replace("\t", " "))


def neutral(text: str) -> str:
    """``text`` with every ``@`` unable to mention and every ``<!--`` unable to open an HTML
    comment (a zero-width joiner inside each). For any position, code included."""
    return text.replace("@", "@" + ZWJ).replace("<!--", "<" + ZWJ + "!--")


def _escaped(text: object) -> str:
    """One line of ``text`` with inline markup, HTML and mentions escaped (no block rules)."""
    out = []
    s = one_line(text)
    for i, ch in enumerate(s):
        if ch in _ENTITIES:
            out.append(_ENTITIES[ch])
        elif ch in _BACKSLASHED:
            out.append("\\" + ch)
        elif ch == "_":  # intraword underscores never emphasize: judge_model stays readable
            inner = 0 < i < len(s) - 1 and s[i - 1].isalnum() and s[i + 1].isalnum()
            out.append("_" if inner else "\\_")
        elif ch == "@":
            out.append("@" + ZWJ)
        else:
            out.append(ch)
    return "".join(out).lstrip(" ")  # leading spaces could indent a code block


def inline(text: object) -> str:
    """Dataset or config text for a line of a paragraph, bullet or heading: one line, no
    markup of its own, no HTML, no mention. Renders as the original text (leading spaces
    dropped)."""
    escaped = _escaped(text)
    if escaped[:1] in ("-", "+", "="):  # a list item, a setext underline
        escaped = "\\" + escaped
    return _BLOCK_START.sub(r"\1\\\2", escaped, count=1)  # 1. or 1) would start a list


def cell(text: object) -> str:
    """Dataset or config text for a GFM table cell (inline only: no block rule applies):
    escaped as :func:`inline` and ``|`` too, so the row keeps its number of cells."""
    return _escaped(text).replace("|", "\\|") or " "


def code_span(text: object) -> str:
    """``text`` as an inline code span: fenced with more backticks than any run inside it,
    on one line, neutralized (:func:`neutral`). Not for table cells (use :func:`cell`)."""
    s = neutral(one_line(text))
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ")) else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def fenced(lines: list[str] | str, info: str = "") -> list[str]:
    """``lines`` as a fenced code block (a list of document lines): the fence is longer
    than any backtick run inside, so no line can close it; each line neutralized."""
    lines = (lines.splitlines() or [""]) if isinstance(lines, str) else [one_line(line) for line in lines]
    body = [neutral(_CONTROL.sub(" ", line)) for line in lines]
    longest = max((len(run) for line in body for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *body, fence]


def marker_name(text: object) -> str:
    """A name for the hidden sticky-comment marker: only ``A-Za-z0-9_.=/+:-`` kept (others
    become ``_``), so it can neither close the comment (``-->``) nor open another."""
    return _MARKER_UNSAFE.sub("_", str(text)).replace("--", "-_") or "_"


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A GFM table: header cells (memrun's own words) and row cells, each escaped with
    :func:`cell`; every row has as many cells as the header."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        cells = [cell(c) for c in row] + [" "] * (len(headers) - len(row))
        out.append("| " + " | ".join(cells[:len(headers)]) + " |")
    return out
