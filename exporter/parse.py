"""A fast parser for the Prometheus text format that reads only the families we consume.

Generic parsers build objects for every one of a page's ~1,000 samples; one regex scan
(`_sample_re`) finds only the wanted lines, so unwanted ones never reach Python code, which
is what makes a scrape cycle cheap. `prometheus_client.parser` is the reference oracle in
the tests (tests/exporter/test_parse_oracle.py); bench/exporter.py measures the difference.

Rules (DESIGN.md "Traps"):
- A page that is not Prometheus text (HTML, JSON, a Prometheus UI table) is refused with
  `ParseError` — never parsed into zeros. The first line is checked whole; every other line
  only by its first character (markup, braces, indented text), wanted lines whole.
- A last line without its trailing newline may be cut in the middle: it is dropped.
- `*_created` series are timestamps, not counters: they are never wanted.
- Valid but incomplete exposition is parsed for what it has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

ENGINE_PREFIXES: tuple[str, ...] = ("vllm:", "vllm_", "sglang:", "sglang_")

_LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
# Fast path for label sets without escapes or spaces (what engines emit): validate, then findall.
_SIMPLE_LABELS_RE = re.compile(r'(?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*",)*(?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")?,?')
_SIMPLE_PAIR_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_ESC_RE = re.compile(r'\\[\\"n]')


class ParseError(ValueError):
    """The page is not Prometheus text exposition (one-line message)."""


def split_prefix(name: str) -> tuple[str | None, str]:
    """`vllm:foo` -> ("vllm", "foo"); `sglang_foo` -> ("sglang", "foo"); other -> (None, name)."""
    for p in ENGINE_PREFIXES:
        if name.startswith(p):
            return p[:-1], name[len(p):]
    return None, name


def _unescape(v: str) -> str:
    return _ESC_RE.sub(lambda m: _ESCAPES[m.group(0)], v) if "\\" in v else v


def parse_labels(text: str) -> dict[str, str]:
    """Parse the inside of `{...}`; raises ParseError on malformed label text."""
    if _SIMPLE_LABELS_RE.fullmatch(text) is not None:
        return dict(_SIMPLE_PAIR_RE.findall(text))
    labels: dict[str, str] = {}
    pos, n = 0, len(text)
    while pos < n:
        if text[pos:].strip() == "":
            break
        m = _LABEL_RE.match(text, pos)
        if not m:
            raise ParseError(f"malformed labels: {text[:80]!r}")
        labels[m.group(1)] = _unescape(m.group(2))
        pos = m.end()
    return labels


def _looks_like_exposition(text: str) -> None:
    head = text.lstrip()[:512].lower()
    if not head:
        raise ParseError("empty page: no Prometheus text exposition")
    if head.startswith(("<", "{", "[")) or "<html" in head or "<!doctype" in head:
        kind = "HTML" if head.startswith("<") or "<html" in head else "JSON"
        raise ParseError(f"not Prometheus text exposition (looks like {kind})")
    first = head.split("\n", 1)[0]
    if not (first.startswith("#") or re.match(r"[a-z_:][a-z0-9_:]*[{ ]", first)):
        raise ParseError(f"not Prometheus text exposition (first line {first[:60]!r})")


@lru_cache(maxsize=16)
def _sample_re(want: frozenset[str] | None, plain: frozenset[str]) -> re.Pattern[str]:
    """One regex over the page (each line preceded by "\n"), so the C scanner skips unwanted lines.

    It matches a wanted sample line (groups 1-3: engine, base name, rest; 4-5: unprefixed name,
    rest) or, with every group None, a line that is not Prometheus text: one starting with a
    character no comment, sample or blank line starts with, or indented text. (The first line is
    checked whole in `_looks_like_exposition`; wanted lines are checked whole here.)
    """
    fam = r"[a-zA-Z0-9_:]+" if want is None else (
        "|".join(sorted(map(re.escape, want), key=len, reverse=True)) or "(?!)")
    pl = "|".join(map(re.escape, sorted(plain))) or "(?!)"
    return re.compile(rf"\n(?:(vllm|sglang)[:_]({fam})([{{ ][^\n]*)|({pl})([{{ ][^\n]*)"
                      r"|(?=[^#\n\r\t a-zA-Z_:]|[ \t]++[^\n\r]))")


def parse_page(text: str, wanted: Iterable[str] | None = None,
               unprefixed: Iterable[str] = ("process_start_time_seconds",)) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Parse `text`, keeping only samples whose base name (engine prefix stripped) is in `wanted`.

    Returns {"<engine>:<base>" or unprefixed name: [(labels, value), ...]}; the engine part keeps
    `vllm`/`sglang` so autodetection can count families. `wanted=None` keeps every prefixed family.
    Duplicate series (same name and label text, as engines write them) keep the last value.
    """
    _looks_like_exposition(text)
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # a last line without newline may be cut mid-way: drop it
    text = "\n" + text
    if text.isspace():
        raise ParseError("not Prometheus text exposition (no complete line)")
    want = frozenset(wanted) if wanted is not None else None
    out: dict[str, dict[str, tuple[dict[str, str], float]]] = {}
    for m in _sample_re(want, frozenset(unprefixed)).finditer(text):
        engine, base, rest, plain_name, plain_rest = m.groups()
        if engine is None:
            if plain_name is None:
                line = text[m.start() + 1: text.find("\n", m.start() + 1)]
                raise ParseError(f"not Prometheus text exposition (line {line[:60]!r})")
            key, rest = plain_name, plain_rest
        elif want is None and base.endswith("_created"):
            continue
        else:
            key = f"{engine}:{base}"
        if rest[0] == "{":
            close = rest.rfind("}")
            if close <= 0:
                raise ParseError(f"unterminated label set in line {m.group(0)[1:61]!r}")
            series = rest[1:close]
            labels = parse_labels(series)
            vals = rest[close + 1:].split()
        else:
            series, labels, vals = "", {}, rest.split()
        if not vals or len(vals) > 2:
            raise ParseError(f"malformed sample line {m.group(0)[1:61]!r}")
        try:
            value = float(vals[0])
        except ValueError:
            raise ParseError(f"malformed sample value {vals[0][:30]!r} for {key}") from None
        out.setdefault(key, {})[series] = (labels, value)
    return {k: list(v.values()) for k, v in out.items()}
