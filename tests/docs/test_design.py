"""docs/design.md stays a contract a person can hold in mind: at most 500 lines, and no measurement in it.

Why (issue 32): design.md had grown to 1,559 lines of calibration passes, ratio tables and load averages beside the
contract, and nothing stopped the next pass from landing there too. Measurements go to dated pages
(docs/calibration.md, docs/scale.md) with the command that reproduces them; the contract states rules. A rule's
bounds (a deadline, a size, a share) are part of the contract and live in the one-address table, each beside the
module that holds it, which is the one place this test lets a number carry a time or ratio unit.

What counts as a measurement here: an ISO date, a load average, or a number followed by a time unit (ns, µs, ms,
s, min, h, days, spelled out or not) or a ratio unit (%, a `×`/`x` written against the number, tokens/s or any
`/s` rate).
"""

from __future__ import annotations

import re

from tests.docs._gen import ROOT

DESIGN = ROOT / "docs" / "design.md"
MAX_LINES = 500
ADDRESS_TABLE = "One address per rule"

_NUMBER = r"(?<![\w.])\d[\d,.]*(?:\s?[–-]\s?\d[\d,.]*)?"
_MEASUREMENT = [
    ("a date", re.compile(r"(?<!\d)(?:19|20)\d\d-[01]\d(?:-[0-3]\d)?(?!\d)")),
    ("a load average", re.compile(r"\bload(?: average)?\s*[~≈]?\s*\d", re.I)),
    ("a time", re.compile(_NUMBER + r"\s?(?:ns|µs|us|ms|s|secs?|seconds?|min|mins|minutes?|h|hours?|days?)(?![\w/])")),
    ("a percentage", re.compile(_NUMBER + r"\s?%")),
    ("a ratio", re.compile(_NUMBER + r"[x×](?!\w)")),
    ("a rate", re.compile(_NUMBER + r"\s?(?:tok(?:ens)?/s|tokens per second|[a-z]*/s)(?!\w)")),
]
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")


def measurements(text: str) -> list[str]:
    """`line N: what (the text)` for every measured-looking number outside the one-address table's rows."""
    found = []
    section = ""
    for n, line in enumerate(text.splitlines(), 1):
        h = _HEADING.match(line)
        if h:
            section = h.group(1)
            continue
        if section.startswith(ADDRESS_TABLE) and line.startswith("|"):
            continue
        for what, rx in _MEASUREMENT:
            m = rx.search(line)
            if m:
                found.append(f"line {n}: {what} ({m.group(0)!r}): {line.strip()[:100]}")
    return found


def test_design_md_is_at_most_500_lines() -> None:
    lines = DESIGN.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"docs/design.md has {lines} lines; the contract holds {MAX_LINES} at most " \
                               "(measurements to docs/calibration.md or docs/scale.md, reasons to docs/decisions.md)"


def test_design_md_holds_no_measurement() -> None:
    assert measurements(DESIGN.read_text(encoding="utf-8")) == []


def test_the_detector_finds_what_it_should() -> None:
    """Each kind of measurement, planted in the real page, is found; the same numbers in the one-address table are
    not; the contract's own arithmetic is not mistaken for one."""
    page = DESIGN.read_text(encoding="utf-8")
    planted = {
        "measured 2026-12-02 on the idle machine": "a date",
        "(load average 0.8–3, 7 pairs)": "a load average",
        "the cycle takes 0.385 ms here": "a time",
        "the verdict took 1.48 s": "a time",
        "within 3 % of vllm bench": "a percentage",
        "20.3× faster than prometheus_client": "a ratio",
        "about 1.4–2.0x": "a ratio",
        "2,771.9 tok/s against 2,227.9": "a rate",
        "a plan at 0.75/s passes": "a rate",
    }
    for line, what in planted.items():
        found = measurements(page + "\n" + line + "\n")
        assert len(found) == 1 and f": {what} (" in found[0], (line, found)
    table_row = "| a bound of 10 s and 1 % | `gate/x.py` |"
    assert measurements(f"### {ADDRESS_TABLE}\n\n{table_row}\n") == []
    assert len(measurements(f"### Elsewhere\n\n{table_row}\n")) == 2
    contract = ["L = 1 + Δaccepted / Δdrafts; a ≥ (L − 1)/k", "3 against 3 gives p ≥ 1/20", "k ≤ 64, at most 8 processes",
                "`--windows 1m`, seed 004 at 2K and 131K", "concurrency × (prompt + output)", "`0.5`, `0.9`, `0.99`"]
    assert measurements("\n".join(contract)) == []


def test_the_pages_the_contract_points_to_exist() -> None:
    for page in ("calibration.md", "scale.md", "decisions.md", "development.md", "operations/engines.md"):
        assert (DESIGN.parent / page).is_file(), page
