"""Every citation of a page's section in code, tests, tools and docs names a heading that page has.

Why (issue 32): some fifty comments and docstrings say where their rule is written down — `design.md "Restarts"`,
`docs/design.md, "Exporter output"`, `(docs/design.md, Fail closed)` — and nothing checked them, so a section that
moved or was renamed left them pointing at nothing. Markdown links with `#anchors` are test_links.py's; this test
covers the citations written as text:

- `<page>.md "<section>"`, `<page>.md, "<section>"`, `<page>.md ("<section>"`, `<page>.md's "<section>"`, with
  further `, "<section>"` after the first, across one line break (a comment or docstring wrapped after the page);
- `<page>.md, <Section>)`: an unquoted section that starts with a capital and ends the parenthesis.

A page is resolved as written (from the repository root, then from the citing file's folder), and a bare name such
as `design.md` or `DESIGN.md` (design.md's first name) by its unique match under docs/, ignoring case. A section
names a heading when, with Markdown marks and quotes dropped and case ignored, the heading is the section or starts
with it followed by " (", ":", "," or " —" (`"Probe and compare"` names `### Probe and compare (`specgate probe`,
…)`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.docs._gen import ROOT

SCANNED = ("exporter", "gate", "tools", "tests", "bench", "deploy", "dashboards", "examples", "docs", "README.md",
           "CHANGELOG.md", "Makefile")
SUFFIXES = (".py", ".md", ".sh", ".yaml", ".yml", ".json", ".jsonnet", ".libsonnet", ".tpl")
# Recorded data and generated or source documents, not citations: goldens, fixtures, expected outputs, the generated
# references and the seeds (which are quoted, never edited).
SKIPPED_DIRS = frozenset({"fixtures", "golden", "expected", "node_modules", "__pycache__"})
SKIPPED_PATHS = frozenset({"docs/reference", "docs/seeds"})
THIS_FILE = Path(__file__).resolve()

_PAGE = r"(?<![\w/.\"'`-])(?P<page>[\w./-]*\.md)"
_QUOTED = re.compile(_PAGE + r"(?:,|'s)?[ \t]*(?:\n[ \t]*(?:#|//|\*)?[ \t]*)?\(?\"(?P<section>[^\"\n]{2,80})\""
                     r"(?P<more>(?:,[ \t]*\"[^\"\n]{2,80}\")*)")
_UNQUOTED = re.compile(_PAGE + r",[ \t]+(?P<section>[A-Z][\w' -]{2,60}?)\)")
_MORE = re.compile(r"\"([^\"\n]{2,80})\"")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


class Citation(NamedTuple):
    where: str  # file:line
    page: str
    section: str


def files() -> Iterator[Path]:
    for top in SCANNED:
        path = ROOT / top
        if path.is_file():
            yield path
            continue
        for folder, dirs, names in os.walk(path):
            rel = Path(folder).relative_to(ROOT).as_posix()
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS
                             and f"{rel}/{d}" not in SKIPPED_PATHS)
            yield from (Path(folder) / n for n in sorted(names) if n.endswith(SUFFIXES))


def citations_in(text: str, where: str) -> list[Citation]:
    """Every page section `text` cites, with `where` and the line of the page name."""
    out = []
    for m in _QUOTED.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        sections = [m.group("section"), *_MORE.findall(m.group("more"))]
        out += [Citation(f"{where}:{line}", m.group("page"), s) for s in sections]
    for m in _UNQUOTED.finditer(text):
        out.append(Citation(f"{where}:{text.count(chr(10), 0, m.start()) + 1}", m.group("page"), m.group("section")))
    return out


def all_citations() -> list[Citation]:
    out = []
    for path in files():
        if path.resolve() == THIS_FILE:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        out += citations_in(text, path.relative_to(ROOT).as_posix())
    return out


def _normal(text: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[`*\"“”]", "", text).replace("\\", "")
    return " ".join(text.lower().split())


@cache
def headings(page: Path) -> tuple[str, ...]:
    found = []
    fence = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fence = not fence
            continue
        h = None if fence else _HEADING.match(line)
        if h:
            found.append(_normal(h.group(1)))
    return tuple(found)


@cache
def _docs_by_name() -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for p in (ROOT / "docs").rglob("*.md"):
        out.setdefault(p.name.lower(), []).append(p)
    return out


def resolve(page: str, citing: Path) -> Path | None:
    """The Markdown file a citation names, or None when there is no such page (or the bare name is ambiguous)."""
    for base in (ROOT, citing.parent):
        candidate = (base / page).resolve()
        if candidate.is_file() and (ROOT in candidate.parents):
            return candidate
    if "/" not in page:
        matches = _docs_by_name().get(page.lower(), [])
        if len(matches) == 1:
            return matches[0]
    return None


def names_a_heading(section: str, page: Path) -> bool:
    want = _normal(section)
    return any(h == want or (h.startswith(want) and h[len(want):len(want) + 2] in (" (", ": ", ", ", " —"))
               or (h.startswith(want) and h[len(want):] in (":", ","))
               for h in headings(page))


def problem(c: Citation) -> str | None:
    citing = ROOT / c.where.rsplit(":", 1)[0]
    page = resolve(c.page, citing)
    if page is None:
        return f"{c.where}: {c.page} is no page of this repository"
    if not names_a_heading(c.section, page):
        return f"{c.where}: {page.relative_to(ROOT)} has no heading {c.section!r}"
    return None


def test_the_citations_are_found() -> None:
    """The scan sees the citations it is for (a regression here means the patterns stopped matching)."""
    found = {(c.where.rsplit(":", 1)[0], c.section) for c in all_citations()}
    assert ("tests/test_layering.py", "Floors") in found
    assert ("deploy/prometheus/specgate-rules.yaml", "Exporter output") in found
    assert len(found) >= 50


@pytest.mark.parametrize("citation", all_citations(), ids=lambda c: f"{c.where} {c.section}")
def test_every_cited_section_exists(citation: Citation) -> None:
    assert problem(citation) is None, problem(citation)


def test_a_wrong_citation_is_reported() -> None:
    """Planted citations: each form is read, resolved and checked, and a wrong one says what is wrong."""
    quote = '"'
    text = "\n".join([
        f"# Why (design.md {quote}Restarts{quote}, {quote}Two phases{quote}).",
        f"rule = 1  # docs/design.md, {quote}Exporter output{quote}",
        f'"""A docstring (design.md,\n{quote}Pool capacity{quote})."""',
        "# (docs/design.md, Fail closed)",
        f"# DESIGN.md {quote}Probe and compare{quote}; scale.md {quote}Series per pod{quote}",
        f"# design.md {quote}No such section{quote}; NOWHERE.md {quote}Floors{quote}",
    ])
    found = citations_in(text, "gate/planted.py")
    assert [(c.page, c.section) for c in found] == [
        ("design.md", "Restarts"), ("design.md", "Two phases"), ("docs/design.md", "Exporter output"),
        ("design.md", "Pool capacity"), ("DESIGN.md", "Probe and compare"), ("scale.md", "Series per pod"),
        ("design.md", "No such section"), ("NOWHERE.md", "Floors"), ("docs/design.md", "Fail closed")]
    problems = [p for c in found if (p := problem(c)) is not None]
    assert problems == ["gate/planted.py:7: docs/design.md has no heading 'No such section'",
                        "gate/planted.py:7: NOWHERE.md is no page of this repository"]


def test_sections_match_headings_by_their_leading_words_only() -> None:
    design = ROOT / "docs" / "design.md"
    assert names_a_heading("Probe and compare", design)  # "### Probe and compare (`specgate probe`, …)"
    assert names_a_heading("command-line contract", design)
    assert not names_a_heading("Probe", design)
    assert not names_a_heading("Restart", design)
    assert names_a_heading("What real means here", ROOT / "docs" / "development.md")  # `What "real" means here`
