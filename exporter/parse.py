"""A fast parser for the Prometheus text format that reads only the families we consume.

Generic parsers build objects for every one of a page's ~1,000 samples; one regex scan
(`PageParser._scan`, built once per family set) finds only the wanted lines, so unwanted ones
never reach Python code, which is what makes a scrape cycle cheap. `prometheus_client.parser`
is the reference oracle in the tests (tests/exporter/test_parse_oracle.py, and a longer run in
`make fuzz`); bench/exporter.py measures the difference.

Rules (DESIGN.md "Traps"):
- A page that is not Prometheus text (HTML, JSON, a Prometheus UI table) is refused with
  `ParseError` — never parsed into zeros. The first line is checked whole; every other line
  by its first character, an indented one by its shape (blank, comment, or a metric name
  followed by `{` or by blanks and a number); wanted lines whole.
- Like prometheus_client: lines may be indented, blanks are spaces or tabs, `{` may follow the
  name after blanks, a value containing `_` (`1_000`, which Python's float() takes) and a label
  name given twice are refused, label names may be quoted.
- A series written twice on one page (the same label set, in any order) is taken once: the
  first one wins and the others are counted as `dropped["duplicate"]` — never summed.
- With `usable_only` (the exporter's scrapes), NaN, ±Inf and negative samples are left out and
  counted (`dropped["non_finite"]`, `dropped["negative"]`): no family we read can be negative.
- A last line without its trailing newline may be cut in the middle: it is dropped.
- `*_created` series are timestamps, not counters: they are never wanted.
- Valid but incomplete exposition is parsed for what it has.

Deliberately not accepted (prometheus_client is laxer): more than one timestamp after a value,
a label with nothing after its `=` (prometheus_client drops that label, which would move the sample
to another stream), and UTF-8 metric names quoted inside the braces (`{"name",...}`): such lines
are refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from functools import lru_cache

from exporter.engines import PAGE_STEMS

DEFAULT_UNPREFIXED: tuple[str, ...] = ("process_start_time_seconds",)
_INF = float("inf")
LABEL_CACHE_ENTRIES = 16_384  # label texts remembered between scrapes (a churning engine clears it)

Labels = Mapping[str, str]
Samples = dict[str, list[tuple[Labels, float]]]

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL_RE = re.compile(r'[ \t]*(?:([a-zA-Z_:][a-zA-Z0-9_:]*)|"((?:[^"\\]|\\.)*)")[ \t]*=[ \t]*'
                       r'"((?:[^"\\]|\\.)*)"[ \t]*(?:,[ \t]*|$)')
# Fast path for label sets without escapes or blanks (what engines emit): validate, then findall.
_SIMPLE_LABELS_RE = re.compile(r'(?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*",)*(?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")?,?')
_SIMPLE_PAIR_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_ESC_RE = re.compile(r'\\[\\"n]')
_FIRST_LINE_RE = re.compile(r"[a-z_:][a-z0-9_:]*(?:[ \t]*\{|[ \t]+[-+.0-9ni])")  # of the lowered head


class ParseError(ValueError):
    """The page is not Prometheus text exposition (one-line message)."""


def _unescape(v: str) -> str:
    return _ESC_RE.sub(lambda m: _ESCAPES[m.group(0)], v) if "\\" in v else v


def parse_labels(text: str) -> dict[str, str]:
    """Parse the inside of `{...}`; raises ParseError on malformed label text or a name given twice."""
    if _SIMPLE_LABELS_RE.fullmatch(text) is not None:
        pairs = _SIMPLE_PAIR_RE.findall(text)
        labels = dict(pairs)
        if len(labels) != len(pairs):
            raise ParseError(f"label name given twice: {text[:80]!r}")
        if any(k.startswith("__") for k in labels):
            raise ParseError(f"reserved label name (__): {text[:80]!r}")
        return labels
    labels = {}
    pos, n = 0, len(text)
    if text.lstrip(" \t").startswith(","):  # one leading comma is allowed, as prometheus_client does
        pos = text.index(",") + 1
    while pos < n:
        if text[pos:].strip(" \t") == "":
            break
        m = _LABEL_RE.match(text, pos)
        if not m:
            raise ParseError(f"malformed labels: {text[:80]!r}")
        name = m.group(1) if m.group(1) is not None else _unescape(m.group(2))
        if name in labels:
            raise ParseError(f"label name given twice: {text[:80]!r}")
        if name.startswith("__"):
            raise ParseError(f"reserved label name (__): {text[:80]!r}")
        labels[name] = _unescape(m.group(3))
        pos = m.end()
    return labels


def _looks_like_exposition(text: str) -> None:
    """Refuse a page whose first line is not Prometheus text, naming HTML/JSON when it is one."""
    head = text.lstrip()[:512].lower()
    if not head:
        raise ParseError("empty page: no Prometheus text exposition")
    if head.startswith(("<", "{", "[")):
        kind = "HTML" if head.startswith("<") else "JSON"
        raise ParseError(f"not Prometheus text exposition (looks like {kind})")
    first = head.split("\n", 1)[0]
    if not (first.startswith("#") or _FIRST_LINE_RE.match(first)):
        raise ParseError(f"not Prometheus text exposition (first line {first[:60]!r})")


def _alternation(words: Iterable[str]) -> str:
    """A regex alternation of `words` as a trie, so the scanner rejects a non-matching name at its first
    differing character instead of trying every name in turn."""
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if "" in node:
            alts.append("")
        if len(alts) == 1:
            return alts[0]
        return "(?:" + "|".join(alts) + ")"

    return emit(trie) if trie else "(?!)"


# The engine stems a family name may start with (`vllm`, `ray_vllm`, `sglang`, `trtllm`, ...: each adapter's
# prefixes, exporter.engines.PAGE_STEMS), longest first so `ray_vllm_x` is never read as stem `ray`.
_STEM_ORDER: tuple[str, ...] = tuple(sorted(PAGE_STEMS, key=len, reverse=True))
_STEMS = "|".join(map(re.escape, _STEM_ORDER))


def _stem_of(name: str) -> str:
    """The stem a scanned family name starts with (the scan matched one, followed by `:` or `_`)."""
    for stem in _STEM_ORDER:
        if name.startswith(stem) and name[len(stem)] in ":_":
            return stem
    raise AssertionError(name)  # the scan only returns names that start with a stem


@lru_cache(maxsize=16)
def _scan_re(want: frozenset[str] | None, plain: frozenset[str]) -> re.Pattern[str]:
    """One regex over the page (each line preceded by "\n"), so the C scanner skips unwanted lines.

    At each line start it matches, in `findall`'s 7 groups:
    - a wanted sample, indented or not: 1 its name as written (`vllm:<base>`, `vllm_<base>`, ... or an
      unprefixed name), 2 label text, 3 value, 4 timestamp;
    - a wanted name followed by anything else or by nothing: 5 (a malformed wanted line: refused);
    - a line that is not Prometheus text: 6, a line starting with a character no comment, sample
      or blank line starts with; 7, an indented line that is neither blank, a comment, nor a metric
      name followed by `{` or by blanks and something that can start a number (engines never
      indent, a traceback always does: only indented lines pay for the whole-shape check);
    and nothing at all for an unwanted line. A comment line (a third of an engine's page: HELP and TYPE)
    is turned away by its first character (`(?!#)`) before any alternative is tried.
    """
    fam = r"[a-zA-Z0-9_:]+" if want is None else _alternation(want)
    pl = _alternation(plain)
    return re.compile(
        rf"\n(?!#)(?:[ \t]*+((?:{_STEMS})[:_]{fam}|{pl})"
        r"(?:(?:[ \t]*\{([^\n]*)\}[ \t]*|[ \t]+)([^ \t\r\n]+)(?:[ \t]+([^ \t\r\n]+))?[ \t\r]*(?=\n)"
        r"|([ \t{\r][^\n]*|(?=\n)))"
        r"|(?=[^#\n\r\t a-zA-Z_:])([^\n]*)"
        rf"|[ \t]++(?!\r*(?:#|\n|\Z)|{_NAME}(?:[ \t]*\{{|[ \t]+[-+.0-9nNiI]))([^\n]*))")


@lru_cache(maxsize=16)
def _lines_re(want: frozenset[str], plain: frozenset[str]) -> re.Pattern[str]:
    """The plan's scan: `_scan_re`'s lines, each captured whole in its one group, so `findall` gives a list
    of strings (no 7-tuples, no name, label and value substrings: those were ~1/3 of the scan's time).

    It captures at exactly the line starts `_scan_re` matches at: a wanted name followed by what can follow
    one there (blanks, `{`, `\r`, the line's end: a sample or a malformed wanted line), a line starting with
    a character no Prometheus line starts with, a badly indented line; `PageParser._by_plan` takes a page
    only when each captured line is the last page's line up to its value."""
    fam, pl = _alternation(want), _alternation(plain)
    return re.compile(
        rf"\n(?!#)([ \t]*+(?:(?:{_STEMS})[:_]{fam}|{pl})(?=[ \t{{\r\n])[^\n]*"
        r"|(?=[^#\n\r\t a-zA-Z_:])[^\n]*"
        rf"|[ \t]++(?!\r*(?:#|\n|\Z)|{_NAME}(?:[ \t]*\{{|[ \t]+[-+.0-9nNiI]))[^\n]*)")


LabelEntry = tuple[Labels, frozenset[tuple[str, str]]]


@dataclass(frozen=True, slots=True)
class PagePlan:
    """How the last page's wanted lines became its `Samples`, kept to read the next page by position.

    An engine writes the same series in the same order on every scrape; only the values move. When a
    page's lines (`_lines_re`) are exactly the last page's lines up to their values (`heads`: each wanted
    line's text before its value, name, labels and blanks as written), every sample lands where it landed
    last time, so the result is built from the values alone, in C (`map(str.startswith, ...)`,
    `map(float, ...)`, `zip`), instead of one Python step per sample. `cuts[i]` is `slice(len(heads[i]),
    None)` (one object per length). The plan keeps the heads of the wanted lines (not the rest of the
    page); `labels[i]`: the label mapping of line i's sample (None for a repeat, which is not taken), so the
    (labels, value) pairs are made by one `zip` over the page; `families`: (key, where its pairs are) in
    output order.
    """

    heads: list[str]
    cuts: list[slice]
    labels: tuple[Labels | None, ...]
    families: tuple[tuple[str, slice | tuple[int, ...]], ...]
    duplicates: int


def _where(positions: list[int]) -> slice | tuple[int, ...]:
    """The values' positions, as a slice when they are one run (the usual page)."""
    if positions and positions[-1] - positions[0] == len(positions) - 1:
        return slice(positions[0], positions[-1] + 1)
    return tuple(positions)


class PageParser:
    """Parses pages for one family set, remembering label texts between scrapes.

    Engines write the same series every scrape, so a label text is parsed once and looked up
    afterwards. The memory is bounded: past `label_cache_entries` distinct texts it starts over.
    The texts stay remembered while a plan reads the pages: a page that breaks the plan gets the same
    label mapping objects back, which the adapters' memories are keyed by (`exporter.engines.common.
    SeriesKeys`); dropping them saved ~0.8 MiB of the soak but made every series new to the adapter
    after each change of a page's lines. One parser per scrape loop (not thread-safe).

    `usable_only` (what the exporter uses; the oracle tests read the page as written): every family
    we consume is a count, a ratio, a size or a time, so a sample that is NaN, ±Inf or negative is
    no value at all. It is left out of the result and counted in `dropped` as `non_finite` or
    `negative`; a repeat of that series is still a repeat (first wins), never its replacement.

    With a wanted family set, a page whose lines are the last page's is read by position (`PagePlan`);
    the result is the same as the full reading's (tests/exporter/test_parse_plan.py holds the two equal).
    """

    def __init__(self, wanted: Iterable[str] | None = None, unprefixed: Iterable[str] = DEFAULT_UNPREFIXED,
                 label_cache_entries: int = LABEL_CACHE_ENTRIES, usable_only: bool = False) -> None:
        self.usable_only = usable_only
        self.wanted = frozenset(wanted) if wanted is not None else None
        self._plain = frozenset(unprefixed)
        self._scan = _scan_re(self.wanted, self._plain)
        self._lines = _lines_re(self.wanted, self._plain) if self.wanted is not None else None
        self._cache: dict[str, LabelEntry] = {}
        self._cache_entries = label_cache_entries
        self._plan: PagePlan | None = None
        self.read_by_plan = False  # the last page was read by `plan` (its series are the plan's page's)

    @property
    def plan(self) -> PagePlan | None:
        """The plan the next page is tried with; the pages one plan reads hold the same series (names and
        label mappings, the very objects) as the page it was made from, in the same order."""
        return self._plan

    def _labels(self, series: str) -> LabelEntry:
        labels = parse_labels(series) if series else {}
        entry = (labels, frozenset(labels.items()))
        if len(self._cache) >= self._cache_entries:
            self._cache.clear()
        self._cache[series] = entry
        return entry

    def parse(self, text: str, dropped: MutableMapping[str, int] | None = None) -> Samples:
        """Parse `text`, keeping only samples whose base name (engine prefix stripped) is wanted.

        Returns {"<engine>:<base>" or unprefixed name: [(labels, value), ...]}; the engine part keeps
        `vllm`/`sglang` so autodetection can count families. `wanted=None` keeps every prefixed
        family. A series given twice keeps its first value; each repeat adds 1 to
        `dropped["duplicate"]`. Label mappings are shared between calls: read them, never change them.
        """
        self.read_by_plan = False
        _looks_like_exposition(text)
        if not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]  # a last line without newline may be cut mid-way: drop it
        if not text or text.isspace():
            raise ParseError("not Prometheus text exposition (no complete line)")
        out: dict[str, dict[frozenset[tuple[str, str]], tuple[Labels, float] | None]] = {}
        cache, any_family, duplicates, usable_only = self._cache, self.wanted is None, 0, self.usable_only
        unusable: dict[str, int] = {}
        # a family's samples come one after the other: its key and dict are looked up once per run of them
        last_name, key, fam, plain = "", "", {}, self._plain
        # the scan wants a newline before each line: the first line gets one of its own, the rest are
        # scanned in place from the first line's newline (no copy of a 1 MB page)
        nl = text.find("\n")
        plan = self._plan
        if plan is not None:
            got = self._by_plan(plan, self._scan_lines(text, nl))
            if got is not None:
                if dropped is not None and plan.duplicates:
                    dropped["duplicate"] = dropped.get("duplicate", 0) + plan.duplicates
                self.read_by_plan = True
                return got
        self._plan = None
        scan = self._scan
        matches = scan.findall(text, nl)
        first = scan.findall("\n" + text[: nl + 1])
        if first:
            matches = first + matches
        # what the plan of this page will be (only with a wanted family set: without one, `_created`
        # series are skipped before their labels are read)
        planning = not any_family
        planned = 0
        where: dict[str, list[int]] = {}
        at: list[int] = []
        for i, (name, series, value, ts, bad, garbage, indented) in enumerate(matches):
            if not value:
                garbage = garbage or indented.lstrip(" \t")
                if garbage:
                    raise ParseError(f"not Prometheus text exposition (line {garbage[:60]!r})")
                raise ParseError(f"malformed sample line {(name + bad)[:60]!r}")
            if name != last_name:
                if name in plain:
                    key = name
                else:
                    stem = _stem_of(name)
                    engine, base = PAGE_STEMS[stem], name[len(stem) + 1:]
                    if any_family and base.endswith("_created"):
                        continue
                    key = f"{engine}:{base}"
                f = out.get(key)
                if f is None:
                    f = out[key] = {}
                    where[key] = []
                fam, last_name, at = f, name, where[key]
            entry = cache.get(series)
            if entry is None:
                entry = self._labels(series)
            planned += 1
            try:
                v = float(value)
                if ts:
                    float(ts)
            except ValueError:
                raise ParseError(f"malformed sample value {value[:30]!r} for {key}") from None
            if "_" in value or (ts and "_" in ts):  # float() takes "1_000"; the text format does not
                raise ParseError(f"malformed sample value {value[:30]!r} for {key}")
            if usable_only and not (0.0 <= v < _INF):  # NaN fails both comparisons
                if entry[1] in fam:
                    duplicates += 1
                    continue
                reason = "negative" if v < 0.0 and v != -_INF else "non_finite"
                unusable[reason] = unusable.get(reason, 0) + 1
                fam[entry[1]] = None
                continue
            # one dict look-up for the repeat check and the store: a series seen before keeps its first value
            item = (entry[0], v)
            if fam.setdefault(entry[1], item) is not item:
                duplicates += 1
            elif planning:
                at.append(i)
        if dropped is not None:
            if duplicates:
                dropped["duplicate"] = dropped.get("duplicate", 0) + duplicates
            for reason, n in unusable.items():
                dropped[reason] = dropped.get(reason, 0) + n
        if unusable:
            return {k: [x for x in v.values() if x is not None] for k, v in out.items()}
        result: Samples = {k: list(v.values()) for k, v in out.items()}  # type: ignore[arg-type]  # no None in it
        if planning and planned == len(matches):
            self._plan = self._make_plan(text, nl, matches, result, where, duplicates)
        return result

    def _scan_lines(self, text: str, nl: int) -> list[str]:
        """The page's lines as the plan reads them (`_lines_re`), the first line included."""
        lines = self._lines
        assert lines is not None  # only a parser with a wanted family set plans
        found = lines.findall(text, nl)
        first = lines.findall("\n" + text[: nl + 1])
        return first + found if first else found

    def _make_plan(self, text: str, nl: int, matches: list[tuple[str, ...]], result: Samples,
                   where: dict[str, list[int]], duplicates: int) -> PagePlan | None:
        """The plan of a page just read in full, or None when a wanted line is not `head value` with nothing
        after its value (a timestamp, trailing blanks or `\r`: such pages are read in full every time)."""
        lines = self._scan_lines(text, nl)
        if len(lines) != len(matches):
            return None
        heads: list[str] = []
        cuts: list[slice] = []
        by_length: dict[int, slice] = {}
        for line, m in zip(lines, matches, strict=True):
            value = m[2]
            if m[3] or not line.endswith(value):
                return None
            n = len(line) - len(value)
            heads.append(line[:n])
            cut = by_length.get(n)
            if cut is None:
                cut = by_length[n] = slice(n, None)
            cuts.append(cut)
        by_line: list[Labels | None] = [None] * len(lines)
        for k, rows in result.items():
            for i, (labels, _) in zip(where[k], rows, strict=True):
                by_line[i] = labels
        return PagePlan(heads, cuts, tuple(by_line), tuple((k, _where(where[k])) for k in result), duplicates)

    def _by_plan(self, plan: PagePlan, lines: list[str]) -> Samples | None:
        """The page's samples read by `plan`, or None when the page is not the planned one (other lines,
        another name or label text, a timestamp, a malformed or unusable value): the full reading then decides.

        Every line the full reading's scan stops at is one of `lines` (`_lines_re`), so a page with a line
        that is not Prometheus text, a malformed wanted line or a new or missing wanted series has other
        lines than the plan. Each line must be its planned head (the last page's text up to the value)
        followed by a value that holds no blank, no other whitespace or control character (so no timestamp:
        `isprintable` and no space) and no `_`, that is a float, and with `usable_only` all of them finite
        and >= 0 (their sum is finite: no NaN or ±Inf; their minimum is not below 0). Such a line is read by
        the full scan as the same name, the same label text (the value holds no `}`) and this value."""
        heads = plan.heads
        if len(lines) != len(heads) or not all(map(str.startswith, lines, heads)):
            return None
        values = list(map(str.__getitem__, lines, plan.cuts))
        joined = "".join(values)
        if not all(values) or not joined.isprintable() or " " in joined or "_" in joined:
            return None
        try:
            floats = list(map(float, values))
        except ValueError:
            return None
        if self.usable_only and floats:
            total = sum(floats)
            if total - total != 0.0 or min(floats) < 0.0:
                return None
        # not zip(strict=True): `floats` has the planned length (checked above); one zip over the page, then
        # each family's run of pairs (one slice: no list of its values, no zip of its own)
        pairs: list[tuple[Labels, float]] = list(zip(plan.labels, floats, strict=False))  # type: ignore[arg-type]
        return {key: pairs[at] if type(at) is slice else [pairs[i] for i in at] for key, at in plan.families}


def parse_page(text: str, wanted: Iterable[str] | None = None, unprefixed: Iterable[str] = DEFAULT_UNPREFIXED,
               dropped: MutableMapping[str, int] | None = None) -> Samples:
    """One page with a fresh `PageParser` (see `PageParser.parse`); a scrape loop keeps one parser instead."""
    return PageParser(wanted, unprefixed).parse(text, dropped)
