"""A drafter's acceptance card in the exporter's own per-position definition (issue 37 item 4).

Why here, in the exporter: the sidecar exposes the card beside live acceptance (`names.CARD_POSITION_RATE`,
`names.CARD_ACCEPTANCE_LENGTH`), and the gate's post phase judges live L and each draft position against the same conversion
(gate.checks.acceptance.card); the gate imports the exporter, never the other way, so the rule lives once, here.

The card's shape is the plan's `evidence.reported.acceptance_card` (gate.plan.card), the same document the chart
passes to the exporter as JSON (`--acceptance-card`):

    {"source": "speculators #1135, DSpark card", "rates": "conditional", "depth": 8, "row": "humaneval",
     "rows": [{"name": "overall", "positions": [0.8, 0.7, ...], "acceptance_length": 3.6}, {"name": "humaneval", ...}]}

The conversion (each step in words beside `names.CARD_POSITION_RATE`):

- conditional rates c_j (P(position j accepted | every earlier one was)) become unconditional u_i = Π_{j≤i} c_j,
  the share of drafts whose position i was accepted; unconditional rates are taken as given and must not rise
  with the position (a draft is accepted prefix-wise);
- the exporter's p_i = accepted_i / drafts equals u_i when every draft had the full depth (basis `exact`);
- when the depth varies, p_i = u_i · f_i, f_i the share of drafts that reached position i (unknown). f is
  non-increasing with Σ_i f_i = k̄ (the window's mean depth) and f_i ≤ 1, so f_i ≥ (k̄ − i) / (k_max − i): the card
  gives bounds, `lower_bound` u_i · max(0, (k̄ − i) / (k_max − i)) and `upper_bound` u_i, never a value;
- the card's L at the live depth: exact 1 + Σ_{i<k} u_i (or the card's own L when it was measured at this k);
  when the depth varies, 1 + (k̄ / k_max) Σ_{i<k_max} u_i ≤ E[L] ≤ 1 + Σ_{i<⌊k̄⌋} u_i + (k̄ − ⌊k̄⌋) u_⌊k̄⌋
  (Chebyshev's sum inequality for the lower, the longest drafts first for the upper).

Every bound assumes a position's acceptance does not depend on how long its draft was.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from exporter.formulas import length_from_rates

Rates = Literal["conditional", "unconditional"]
Basis = Literal["exact", "lower_bound", "upper_bound"]
RATES: tuple[Rates, ...] = ("conditional", "unconditional")
DEFAULT_ROW = "overall"
# Keys of the plan's card the exporter does not use (the gate's judgement settings): accepted and ignored here.
GATE_KEYS = frozenset({"min_fraction", "on_drift"})
CARD_KEYS = frozenset({"source", "rates", "depth", "row", "rows"})
ROW_KEYS = frozenset({"name", "positions", "acceptance_length"})
MAX_POSITIONS = 64  # exporter.bounds' position limit: a card past it is a typo


@dataclass(frozen=True)
class Card:
    """One row of a card, converted: `unconditional` u_i per position, the card's L, the k it was measured at."""

    source: str
    rates: Rates
    row: str
    positions: tuple[float, ...]  # as the card gives them
    unconditional: tuple[float, ...]
    acceptance_length: float | None
    depth: int | None


@dataclass(frozen=True)
class CardValue:
    """The card at one live window in the exporter's definition: a value (`exact`) or one side of a bound."""

    basis: Basis
    value: float


def unconditional(positions: tuple[float, ...], rates: Rates) -> tuple[float, ...]:
    """u_i = Π_{j≤i} c_j for conditional rates; unconditional rates unchanged."""
    if rates == "unconditional":
        return positions
    out, running = [], 1.0
    for c in positions:
        running *= c
        out.append(running)
    return tuple(out)


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


def read_card(doc: Mapping[str, Any]) -> Card:
    """The card's named row (default `overall`), checked and converted; ValueError with one line naming the key."""
    unknown = sorted(set(doc) - CARD_KEYS - GATE_KEYS)
    if unknown:
        raise ValueError(f"acceptance card: unknown key(s) {', '.join(unknown)}")
    source, rates, rows = doc.get("source"), doc.get("rates"), doc.get("rows")
    if not isinstance(source, str) or not source.strip():
        raise ValueError("acceptance card: source is required (where the card comes from)")
    if rates not in RATES:
        raise ValueError(f"acceptance card: rates must be conditional or unconditional, got {rates!r}")
    depth = doc.get("depth")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or not 0 < depth <= MAX_POSITIONS):
        raise ValueError(f"acceptance card: depth must be a whole number 1..{MAX_POSITIONS}, got {depth!r}")
    if not isinstance(rows, list | tuple) or not rows or not all(isinstance(r, Mapping) for r in rows):
        raise ValueError("acceptance card: rows must list the card's rows, each with its name (overall, a task subset)")
    names = [r.get("name") for r in rows]
    if not all(isinstance(n, str) and n for n in names):
        raise ValueError("acceptance card: every row needs a name (overall, a task subset)")
    dup = sorted({str(n) for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"acceptance card: row names must be unique (repeated: {', '.join(dup)})")
    row = doc.get("row", DEFAULT_ROW)
    if not isinstance(row, str) or row not in names:
        raise ValueError(f"acceptance card: row {row!r} is not one of its rows ({', '.join(map(str, names))})")
    for r in rows:
        _check_row(str(r["name"]), r, rates, depth)
    body = rows[names.index(row)]
    positions = tuple(_number(x, "") for x in body.get("positions") or ())
    length = body.get("acceptance_length")
    return Card(source.strip(), rates, row, positions, unconditional(positions, rates),
                None if length is None else float(length), depth)


def _check_row(name: str, body: object, rates: Rates, depth: int | None) -> None:
    where = f"acceptance card: rows.{name}"
    if not isinstance(body, Mapping):
        raise ValueError(f"{where}: expected positions and/or acceptance_length")
    unknown = sorted(set(body) - ROW_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    raw = body.get("positions")
    if raw is not None and not isinstance(raw, list | tuple):
        raise ValueError(f"{where}.positions: expected a list of rates, one per draft position")
    positions = tuple(_number(x, f"{where}.positions[{i}]") for i, x in enumerate(raw or ()))
    length = body.get("acceptance_length")
    if not positions and length is None:
        raise ValueError(f"{where}: give positions, acceptance_length or both")
    if len(positions) > MAX_POSITIONS:
        raise ValueError(f"{where}.positions: {len(positions)} positions, more than {MAX_POSITIONS}")
    if depth is not None and len(positions) > depth:
        raise ValueError(f"{where}.positions: {len(positions)} positions for a card measured at depth {depth}")
    for i, p in enumerate(positions):
        if not 0 <= p <= 1:
            raise ValueError(f"{where}.positions[{i}]: a rate is between 0 and 1, got {p:g}")
    if rates == "unconditional":
        for i in range(1, len(positions)):
            if positions[i] > positions[i - 1] + 1e-9:
                raise ValueError(f"{where}.positions[{i}]: {positions[i]:g} above position {i - 1}'s "
                                 f"{positions[i - 1]:g}; unconditional rates cannot rise (drafts are accepted "
                                 "prefix-wise): are they conditional?")
    if length is not None:
        value = _number(length, f"{where}.acceptance_length")
        ceiling = depth if depth is not None else (len(positions) or None)
        if value < 1 or (ceiling is not None and value > 1 + ceiling + 1e-9):
            raise ValueError(f"{where}.acceptance_length: {value:g} outside 1..1 + k"
                             + (f" = {1 + ceiling}" if ceiling is not None else ""))


def _reach_floor(i: int, k_mean: float, k_max: int) -> float:
    """The least share of drafts that reached position i, given mean depth k̄ and maximum k_max (module docstring)."""
    return max(0.0, min(1.0, (k_mean - i) / (k_max - i)))


def position_values(card: Card, k_max: int | None, k_mean: float | None,
                    varies: bool | None) -> list[tuple[int, CardValue]]:
    """The card per position i < k_max in the exporter's definition p_i = accepted_i / drafts, at one live window:
    `exact` u_i at a fixed depth; `upper_bound` u_i and (with k̄) `lower_bound` u_i · f_i,min when it varies or
    nobody can tell. Positions the card does not give, or past the live k_max, are absent."""
    n = len(card.unconditional) if k_max is None else min(k_max, len(card.unconditional))
    out: list[tuple[int, CardValue]] = []
    for i in range(n):
        u = card.unconditional[i]
        if varies is False:
            out.append((i, CardValue("exact", u)))
            continue
        if k_max is not None and k_mean is not None:
            out.append((i, CardValue("lower_bound", u * _reach_floor(i, k_mean, k_max))))
        out.append((i, CardValue("upper_bound", u)))
    return out


def length_values(card: Card, k_max: int | None, k_mean: float | None, varies: bool | None) -> list[CardValue]:
    """The card's L at one live window (module docstring): `exact` at a fixed depth k the card covers (its
    positions up to k, or its own L measured at k), bounds from its positions when the depth varies."""
    u = card.unconditional
    if k_max is None:
        return []
    if varies is False:
        if len(u) >= k_max:
            return [CardValue("exact", length_from_rates(u[:k_max]))]
        if card.acceptance_length is not None and card.depth == k_max:
            return [CardValue("exact", card.acceptance_length)]
        return []
    if len(u) < k_max or k_mean is None:
        return []
    mean = min(max(k_mean, 0.0), float(k_max))
    low = length_from_rates(x * mean / k_max for x in u[:k_max])
    high = length_from_rates(x * max(0.0, min(1.0, mean - i)) for i, x in enumerate(u[:k_max]))
    return [CardValue("lower_bound", low), CardValue("upper_bound", high)]
