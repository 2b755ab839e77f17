"""A fast parser for the Prometheus text format that reads only the families we consume.

Generic parsers build objects for every one of a page's ~1,000 samples; we look at the
metric name first and skip the line unless its family is wanted, which is what makes a
scrape cycle cheap. `prometheus_client.parser` is the reference oracle in the tests.

Rules (DESIGN.md "Traps"):
- A page that is not Prometheus text (HTML, JSON, a Prometheus UI table) is refused with
  `ParseError` — never parsed into zeros.
- A last line without its trailing newline may be cut in the middle: it is dropped.
- `*_created` series are timestamps, not counters: they are never wanted.
- Valid but incomplete exposition is parsed for what it has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

ENGINE_PREFIXES: tuple[str, ...] = ("vllm:", "vllm_", "sglang:", "sglang_")

_LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
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
    if not (first.startswith("#") or re.match(r"[a-z_:]", first)):
        raise ParseError(f"not Prometheus text exposition (first line {first[:60]!r})")


def parse_page(text: str, wanted: Iterable[str] | None = None,
               unprefixed: Iterable[str] = ("process_start_time_seconds",)) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Parse `text`, keeping only samples whose base name (engine prefix stripped) is in `wanted`.

    Returns {"<engine>:<base>" or unprefixed name: [(labels, value), ...]}; the engine part keeps
    `vllm`/`sglang` so autodetection can count families. `wanted=None` keeps every prefixed family.
    Duplicate series (same name and labels) keep the last value.
    """
    _looks_like_exposition(text)
    want = frozenset(wanted) if wanted is not None else None
    plain = frozenset(unprefixed)
    lines = text.split("\n")
    if not text.endswith("\n"):
        lines = lines[:-1]  # a last line without newline may be cut mid-way: drop it
    out: dict[str, dict[tuple, tuple[dict[str, str], float]]] = {}
    seen_sample = False
    for line in lines:
        if not line or line[0] == "#":
            continue
        brace = line.find("{")
        space = line.find(" ")
        end = brace if brace != -1 and (space == -1 or brace < space) else space
        if end <= 0:
            if line.strip():
                raise ParseError(f"not Prometheus text exposition (line {line[:60]!r})")
            continue
        name = line[:end]
        seen_sample = True
        engine, base = split_prefix(name)
        if engine is None:
            if name not in plain:
                continue
            key = name
        else:
            if base.endswith("_created") or (want is not None and base not in want):
                continue
            key = f"{engine}:{base}"
        if not _NAME_RE.match(name):
            raise ParseError(f"invalid metric name {name[:60]!r}")
        if end == brace:
            close = line.rfind("}")
            if close < brace:
                raise ParseError(f"unterminated label set in line {line[:60]!r}")
            labels = parse_labels(line[brace + 1:close])
            rest = line[close + 1:].split()
        else:
            labels = {}
            rest = line[end:].split()
        if not rest or len(rest) > 2:
            raise ParseError(f"malformed sample line {line[:60]!r}")
        try:
            value = float(rest[0])
        except ValueError:
            raise ParseError(f"malformed sample value {rest[0][:30]!r} for {name}") from None
        out.setdefault(key, {})[tuple(sorted(labels.items()))] = (labels, value)
    if not seen_sample and not any(ln.startswith("#") for ln in lines):
        raise ParseError("not Prometheus text exposition (no samples)")
    return {k: list(v.values()) for k, v in out.items()}
