"""Every relative link and `#anchor` in the Markdown a user reads resolves, and every runbook link an alert
carries lands on a runbook heading.

Why: docs move (issue 24 moves the README's reference parts into docs/), and a link that points at a moved
page or a renamed heading fails silently on GitHub. Checked, without the network:

- README.md, CHANGELOG.md, docs/**/*.md and every other Markdown file of the tree: every inline link `[text](target)`, reference definition
  `[id]: target` and HTML `href=` / `src=` that is not an absolute URL resolves to a file or folder of the
  repository (relative to the page), and its `#fragment`, on a Markdown target, to a heading's GitHub anchor
  (lower case; punctuation other than `-` and `_` dropped; spaces to `-`; a repeated heading gets `-1`, `-2`)
  or an explicit `<a id=...>` / `<a name=...>`. Links inside code spans and fenced blocks are text, not links.
- deploy/ and dashboards/: every URL into this repository (`https://github.com/specgate/specgate/blob/main/PATH`)
  names an existing file, its anchor an existing heading; every `runbook_url` (the rendered rules, the chart's
  copy) points at a heading of docs/runbook.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPO_URL = "https://github.com/specgate/specgate/blob/main/"
RUNBOOK = ROOT / "docs" / "runbook.md"

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HTML = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_EXPLICIT = re.compile(r"""<a\s+[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']""")


def pages() -> list[Path]:
    """Every Markdown file of the tree (README.md, CHANGELOG.md, docs/**, and the READMEs of deploy/, tests/,
    tools/), without hidden folders (.venv, .tools, .git) and installed packages (node_modules)."""
    found = []
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
        found += [Path(top) / f for f in sorted(files) if f.endswith(".md")]
    return found


def _prose(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, code spans blanked."""
    fence: str | None = None
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
            elif m.group(1).startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, _CODE_SPAN.sub(lambda s: " " * len(s.group(0)), line)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's Markdown source: links to their text, code/emphasis marks and HTML tags
    dropped, lower case, every character but letters, digits, `-`, `_` and spaces dropped, spaces to `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # _emphasis_, not snake_case
    return "".join(c for c in text.strip().lower() if c.isalnum() or c in " -_").replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a Markdown file defines (headings, with GitHub's -1, -2 for repeats; explicit anchors)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fence: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _FENCE.match(line)
        if m:
            fence = (m.group(1)[0] * 3 if fence is None else None if m.group(1).startswith(fence) else fence)
            continue
        if fence is not None:
            continue
        out.update(_EXPLICIT.findall(line))
        h = _HEADING.match(line)
        if h:
            base = slug(h.group(2))
            n = seen.get(base, 0)
            out.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return frozenset(out)


def links(page: Path) -> Iterator[tuple[int, str]]:
    for n, line in _prose(page.read_text(encoding="utf-8")):
        for rx in (_INLINE, _HTML):
            for m in rx.finditer(line):
                yield n, m.group(1)
        ref = _REF_DEF.match(line)
        if ref:
            yield n, ref.group(1)


def problem(source: Path, target: str) -> str | None:
    """Why `target` (as written in `source`) does not resolve, or None when it does."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
        return None
    path_part, _, fragment = target.partition("#")
    dest = source if not path_part else (source.parent / path_part.split("?", 1)[0]).resolve()
    if not dest.exists():
        return f"{target}: no such file"
    try:
        dest.relative_to(ROOT)
    except ValueError:
        return f"{target}: outside the repository"
    if fragment and dest.suffix == ".md" and fragment.lower() not in anchors(dest):
        return f"{target}: no heading #{fragment} in {dest.relative_to(ROOT)}"
    return None


def broken(page: Path) -> list[str]:
    rel = page.relative_to(ROOT)
    return [f"{rel}:{n}: {why}" for n, target in links(page) if (why := problem(page, target)) is not None]


def test_the_pages_a_user_reads_are_checked() -> None:
    found = {p.relative_to(ROOT).as_posix() for p in pages()}
    assert {"README.md", "CHANGELOG.md", "docs/runbook.md", "docs/reference/cli.md"} <= found


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken(page) == []


def _deploy_files() -> list[Path]:
    return sorted(p for top in ("deploy", "dashboards") for p in (ROOT / top).rglob("*")
                  if p.is_file() and p.suffix in (".yaml", ".yml", ".json", ".jsonnet", ".libsonnet", ".md", ".tpl"))


def repo_urls() -> list[tuple[str, str]]:
    """(file:line, URL) for every URL into this repository under deploy/ and dashboards/."""
    out = []
    for p in _deploy_files():
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            for m in re.finditer(re.escape(REPO_URL) + r"""[^\s"'`)<>]*""", line):
                out.append((f"{p.relative_to(ROOT)}:{n}", m.group(0)))
    return out


def test_every_repository_url_in_deploy_resolves() -> None:
    urls = repo_urls()
    assert len(urls) >= 14  # the rules (twice: deploy/prometheus and the chart), the dashboards, Chart.yaml
    bad = [f"{where}: {why}" for where, url in urls
           if (why := problem(ROOT / "README.md", url.removeprefix(REPO_URL))) is not None]
    assert bad == []


def test_every_runbook_url_lands_on_a_runbook_heading() -> None:
    found = []
    for p in _deploy_files():
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            m = re.search(r"""runbook_url["']?\s*:\s*["']?(https?://\S+?)["']?\s*,?$""", line)
            if m:
                found.append((f"{p.relative_to(ROOT)}:{n}", m.group(1)))
    rendered = [u for where, u in found if where.startswith("deploy/prometheus/specgate-rules.yaml")]
    assert len(rendered) >= 14, found  # one per alert of the shipped rules
    heads = anchors(RUNBOOK)
    bad = [f"{where}: {url}" for where, url in found
           if not url.startswith(REPO_URL + "docs/runbook.md#") or url.rpartition("#")[2] not in heads]
    assert bad == []


def test_the_slugs_are_githubs() -> None:
    """Headings whose anchors GitHub gives as shown (checked on github.com renderings of such headings)."""
    assert slug("SpecgateAcceptanceSLOFastBurn") == "specgateacceptanceslofastburn"
    assert slug("`specgate probe` (and `probe ab`)") == "specgate-probe-and-probe-ab"
    assert slug("specgate_spec_depth_max") == "specgate_spec_depth_max"
    assert slug("When the depth varies (dynamic and adaptive speculation)") == \
        "when-the-depth-varies-dynamic-and-adaptive-speculation"
    assert slug("KV geometry (`specgate kv`)") == "kv-geometry-specgate-kv"
    assert slug("[Plan](plan.md) keys: *all* of them") == "plan-keys-all-of-them"


def test_a_broken_link_is_reported(tmp_path: Path) -> None:
    """The checker fails on what it should (a page written here, outside the tree: relative links from it)."""
    page = ROOT / "docs" / "runbook.md"
    assert problem(page, "#specgateenginedown") is None
    assert problem(page, "#no-such-alert") == "#no-such-alert: no heading #no-such-alert in docs/runbook.md"
    assert problem(page, "scale.md") is None and problem(page, "nope.md") == "nope.md: no such file"
    assert problem(page, "../README.md#no-such") is not None
    assert problem(page, "https://example.com/x") is None
