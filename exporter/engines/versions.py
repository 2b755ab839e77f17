"""Engine versions an adapter was not written against: detected, said once, and only matching shapes read.

Why: each adapter reads the names and labels of the engine versions it was checked against (its
`tested` range, data in the adapter's module). An engine outside that range may have renamed a label,
split a family by a new one or dropped one the adapter needs, and a family read in the wrong shape is a
wrong number, not a missing one. So:

- `tested(kind, version)`: "true" inside the adapter's range, "false" outside it, "unknown" when the
  engine did not say its version (or said something that is not a version) — the label
  `version_tested` of `specgate_engine_info` (exporter.collect.engine_health), and one log line per
  side-info read (once per engine start: `say_untested`).
- `conforming(adapter, page, dropped)`: a family whose samples lack a label the adapter needs to read it
  (the adapter's `shapes`: base name -> required label names, e.g. vLLM's per-position counter needs
  `position`; bucket series without a numeric `le` are already left out by `common.histograms`) is
  left out whole and its samples are counted as `reason="shape"` in `specgate_engine_anomalies_total`
  — on every version, since a tested version never fails it, and on an untested one it is the check
  that keeps a changed family from being read as if it had not changed. Families are never renamed or
  guessed back into shape.

A version is compared by its leading release numbers (`0.10.1rc1` -> (0, 10, 1); a local `+cpu` suffix
and pre-release tags do not move it out of its release): low <= version <= high, where `high` covers
every patch of its last number (`high` (0, 33) admits 0.33.4).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Literal, Protocol

from exporter.engines.base import ParsedPage

log = logging.getLogger(__name__)

Tested = Literal["true", "false", "unknown"]
SHAPE = "shape"  # the anomaly reason of a family left out for its shape
_RELEASE = re.compile(r"\s*v?(\d+(?:\.\d+)*)")


@dataclass(frozen=True)
class VersionRange:
    """The engine versions an adapter was checked against, inclusive: `low` <= v <= `high` (each as release
    numbers, `high` admitting every later number below its last: (0, 33) admits 0.33.4), and how it reads."""

    low: tuple[int, ...]
    high: tuple[int, ...]
    text: str
    source: str  # what the range was checked against (real captures, source at a tag)

    def admits(self, version: tuple[int, ...]) -> bool:
        return self.low <= version[: len(self.low)] and version[: len(self.high)] <= self.high


class Adapter(Protocol):
    """What this module needs of every adapter; `tested_versions` (VersionRange | None) and `shapes` (base
    name -> required labels) are read when the adapter has them (an adapter without them: no range, no
    shape beyond `le`)."""

    @property
    def kind(self) -> str:
        ...


def tested_range(ad: object) -> VersionRange | None:
    """The adapter's tested range (its `tested_versions`), None when it declares none."""
    rng = getattr(ad, "tested_versions", None)
    return rng if isinstance(rng, VersionRange) else None


def _shapes(ad: object) -> Mapping[str, frozenset[str]]:
    shapes = getattr(ad, "shapes", None)
    return shapes if isinstance(shapes, Mapping) else {}


def release(version: str | None) -> tuple[int, ...] | None:
    """The leading release numbers of a version string (None when it does not start with one)."""
    if not isinstance(version, str):
        return None
    m = _RELEASE.match(version)
    if m is None:
        return None
    return tuple(int(p) for p in m.group(1).split("."))


def tested(rng: VersionRange | None, version: str | None) -> Tested:
    """Whether `version` lies in `rng` ("unknown" without a version or a range)."""
    rel = release(version)
    if rel is None or rng is None:
        return "unknown"
    return "true" if rng.admits(rel) else "false"


def say_untested(ad: Adapter, version: str | None) -> Tested:
    """Log one warning when `version` is outside the adapter's tested range (called once per side-info read,
    i.e. once per engine start); returns the verdict."""
    rng = tested_range(ad)
    verdict = tested(rng, version)
    if verdict == "false" and rng is not None:
        log.warning("%s %s is outside the versions this exporter was checked against (%s, %s): families whose "
                    "shape differs are left out and counted as anomalies reason=shape; nothing is guessed",
                    ad.kind, version, rng.text, rng.source)
    return verdict


def conforming(ad: Adapter, page: ParsedPage, dropped: MutableMapping[str, int] | None = None) -> ParsedPage:
    """`page` without the families that lack a label the adapter needs (their samples counted in
    `dropped["shape"]`). The page itself when every family conforms (the usual case: no copy). Only the
    families with a shape are looked at: a few hundred samples on a 32-stream vLLM page."""
    bad: list[str] = []
    n = 0
    shapes, kind = _shapes(ad), ad.kind
    for base, need in shapes.items():
        key = f"{kind}:{base}"
        rows = page.get(key)
        if rows and any(not need.issubset(labels.keys()) for labels, _ in rows):
            bad.append(key)
            n += len(rows)
    if not bad:
        return page
    if dropped is not None:
        dropped[SHAPE] = dropped.get(SHAPE, 0) + n
    return {k: v for k, v in page.items() if k not in bad}


# --- acceptance semantics per engine version (issue 37 items 2-3) ---------------------------------------------

@dataclass(frozen=True)
class AcceptanceDefinition:
    """What an engine's acceptance means over a range of its versions: what its L counts, its rejection default,
    and whether specgate converts its counters exactly to its own decode-only L (`exact`). Two records on two
    definitions are one quantity only when both convert exactly (gate.model.invariants.definition_change)."""

    low: tuple[int, ...]
    high: tuple[int, ...]
    name: str  # how a reason names it
    counts: str  # what the engine's L counts
    rejection_default: str | None  # the rejection mode when none is stated; None: not known for these versions
    exact: bool  # specgate's L from this range's counters is its decode-only L exactly
    source: str

    def admits(self, version: tuple[int, ...]) -> bool:
        return self.low <= version[: len(self.low)] and version[: len(self.high)] <= self.high


INF = (10**6,)  # no upper end
# Rejection modes that do not keep the target's distribution (vLLM main `fly`); the others (standard, strict,
# probabilistic, block) do, though a stated non-default one changes acceptance by itself (vLLM 0.32 `block`).
# SGLang's "default" is no rejection-sampling and no block-verification flag.
LOSSY_REJECTION = frozenset({"fly"})
SIMULATED_REJECTION = frozenset({"synthetic"})

def acceptance_definition(definitions: tuple[AcceptanceDefinition, ...],
                          version: str | None) -> AcceptanceDefinition | None:
    """The definition of an engine's table (its package's `acceptance.DEFINITIONS`, registered in
    `exporter.engines.ACCEPTANCE`) at `version` (None: no version, or none recorded for it)."""
    rel = release(version)
    if rel is None:
        return None
    for d in definitions:
        if d.admits(rel):
            return d
    return None
