"""Floor 0: energy beside speed — tokens per joule, joules per accepted token, and whether reported figures agree.

Why its own module: seed 004 reports tokens per joule as decode tokens per second divided by board watts
("2.97 vs 1.96 tok/J at 2K … 36.3 vs 36.0 W"), and issue 38 asks for the same figure per probe arm from
measured joules. Both are one division; what needs care is the units and the rounding:

    tokens_per_joule          = tokens / joules                  = (tokens/s) / W
    joules_per_accepted_token = joules / tokens                  (every output token is an accepted one:
                                                                  rejected draft tokens are never emitted)

The idle baseline (watts before the run) is shown beside the joules, never subtracted from them.

A reported tok/J is consistent with its own rate and watts when |rate / W − tok/J| is within what the
three numbers' printed rounding allows (half a unit of each one's last printed digit, propagated); a
plan whose figures disagree beyond that is refused (gate.plan.model), not silently recomputed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from gate.model.invariants import COMPLETENESS, IDENTITY, PLAUSIBILITY, reason
from gate.model.speedup.pays import Verdict, decide
from gate.stats import Alternative, StatsError, mann_whitney_u, speedup


def tokens_per_joule(tokens: float, joules: float) -> float | None:
    """Tokens per joule; None when the energy is not positive (no reading, or a counter that did not move)."""
    if not (math.isfinite(tokens) and math.isfinite(joules)) or joules <= 0 or tokens < 0:
        return None
    return tokens / joules


def rate_per_watt(tokens_per_second: float, watts: float) -> float | None:
    """Seed 004's tok/J: decode tokens per second over mean power in watts (J/s), the same unit as tokens / J."""
    return tokens_per_joule(tokens_per_second, watts)


def half_unit(value: float) -> float:
    """Half a unit in the last printed digit of a reported number (36.3 → 0.05, 2.97 → 0.005, 343699 → 0.5)."""
    exp = Decimal(repr(float(value))).normalize().as_tuple().exponent
    places = -exp if isinstance(exp, int) and exp < 0 else 0
    return 0.5 * 10.0 ** -places


def disagreement(tokens_per_second: float, watts: float, reported_tokens_per_joule: float) -> str | None:
    """Why a reported tok/J cannot come from its own rate and watts (beyond their rounding), or None."""
    got = rate_per_watt(tokens_per_second, watts)
    if got is None:
        return f"watts {watts:g} give no tokens per joule"
    allowance = (half_unit(reported_tokens_per_joule)
                 + got * (half_unit(watts) / watts + half_unit(tokens_per_second) / max(tokens_per_second, 1e-12)))
    if abs(got - reported_tokens_per_joule) > allowance:
        return (f"reported {reported_tokens_per_joule:g} tok/J, but {tokens_per_second:g} tok/s ÷ {watts:g} W = "
                f"{got:.3g} tok/J (rounding allows ±{allowance:.2g})")
    return None


@dataclass(frozen=True)
class EnergyResult:
    """Tokens per joule of both arms at one point: the ratio of medians with its band, the same one-sided rank
    test as speed (gate.model.speedup.point), and the verdict rule (gate.model.speedup.pays.decide) against
    `min_ratio` (slo.min_tokens_per_joule_ratio)."""

    verdict: Verdict
    reason: str
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    interval_kind: str | None = None
    p_value: float | None = None
    test_method: str | None = None
    baseline_tokens_per_joule: float | None = None
    speculative_tokens_per_joule: float | None = None
    baseline_joules_per_token: float | None = None
    speculative_joules_per_token: float | None = None
    n_baseline: int = 0
    n_speculative: int = 0

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["verdict"] = self.verdict.value
        return d


def judge_energy(base: Sequence[float], spec: Sequence[float], alpha: float,
                 min_ratio: float | None = None) -> EnergyResult:
    """Tokens per joule per repetition of each arm → the verdict, as `judge_rates` judges served tokens/s:
    "pays" here means significantly more tokens per joule (and at least `min_ratio` times the baseline's)."""
    try:
        s = speedup(list(spec), list(base))
        more = mann_whitney_u(list(spec), list(base), Alternative.GREATER)
        less = mann_whitney_u(list(spec), list(base), Alternative.LESS)
    except StatsError as e:
        return EnergyResult(Verdict.INCONCLUSIVE, f"tokens per joule not compared: {e}",
                            n_baseline=len(base), n_speculative=len(spec))
    verdict = decide(more.p_value, less.p_value, s.speedup, alpha, min_ratio)
    p = more.p_value if s.speedup >= 1 else less.p_value
    nums = (f"{s.median_x:.3g} vs {s.median_y:.3g} tok/J (medians of {s.n_x} and {s.n_y}), ratio {s.speedup:.3g} "
            f"({s.interval_kind.value} {s.low:.3g}-{s.high:.3g})")
    if verdict is Verdict.PAYS:
        why = f"more tokens per joule with speculation: {nums}; p = {p:.3g} < {alpha:g}"
    elif verdict is Verdict.DOES_NOT_PAY:
        below = more.p_value < alpha
        why = (f"not enough tokens per joule: {nums}; significantly more (p = {p:.3g}) but below "
               f"min_tokens_per_joule_ratio {min_ratio:g}" if below
               else f"fewer tokens per joule with speculation: {nums}; p = {p:.3g} < {alpha:g}")
    else:
        why = f"inconclusive: {nums}; the rank test cannot tell the arms apart (p = {p:.3g}, not < {alpha:g})"
    return EnergyResult(verdict, why, ratio=s.speedup, ratio_low=s.low, ratio_high=s.high,
                        interval_kind=s.interval_kind.value, p_value=p, test_method=more.method,
                        baseline_tokens_per_joule=s.median_y, speculative_tokens_per_joule=s.median_x,
                        baseline_joules_per_token=1 / s.median_y if s.median_y > 0 else None,
                        speculative_joules_per_token=1 / s.median_x if s.median_x > 0 else None,
                        n_baseline=len(base), n_speculative=len(spec))


# --- Energy cells as evidence (issue 38): the intake's rules for a record's energy readings. ---------------------
# Why here: they are arithmetic on the readings (J, W, seconds), like the rest of this module; the intake
# (gate.evidence.probe_vetting) calls them from record_defects / pair_defects, so every reason starts with its
# invariant's message (gate.model.invariants.reason). The records are read through Protocols: this floor does not
# import the evidence layer that defines them.

MAX_WATTS_PER_GPU = 3_000.0
"""The most mean power one GPU board may draw over a cell: an H100 SXM is 700 W, a B200 1,000 W, a GB200 board
2,700 W with its CPU; above 3 kW per GPU counted the joules are not a GPU's (wrong unit, a summed counter)."""
ENERGY_SOURCES = ("dcgm:", "nvml:")
"""The sources `specgate probe --energy-source` reads (gate.probe.energy): anything else is an unknown source."""


class EnergyReading(Protocol):
    @property
    def joules(self) -> float: ...
    @property
    def source(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def gpus(self) -> Sequence[str]: ...
    @property
    def idle_watts(self) -> float | None: ...


class EnergyCell(Protocol):
    @property
    def mix(self) -> str: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def request_rate(self) -> float | None: ...
    @property
    def repetition(self) -> int: ...
    @property
    def wall_seconds(self) -> float: ...
    @property
    def energy(self) -> EnergyReading | None: ...


class EnergyRecord(Protocol):
    @property
    def arm(self) -> str: ...
    @property
    def cells(self) -> Sequence[EnergyCell]: ...


def _where(arm: str, c: EnergyCell) -> str:
    at = f"request rate {c.request_rate:g}/s" if c.request_rate is not None else f"concurrency {c.concurrency}"
    return f"the {arm} record's cell {c.mix!r} at {at}, repetition {c.repetition}"


def energy_label(e: EnergyReading) -> tuple[str, str, str]:
    """What a reading is, as the arms must share it to be compared: (scope, method, source)."""
    return e.scope, e.method, e.source


def _cell_energy_defect(arm: str, c: EnergyCell, e: EnergyReading) -> str | None:
    where = _where(arm, c)
    if not (isinstance(e.joules, (int, float)) and math.isfinite(e.joules)) or e.joules < 0:
        return reason(PLAUSIBILITY, f"{where}: {e.joules!r} J of energy (joules are finite and not negative)")
    if not e.source.startswith(ENERGY_SOURCES) or len(e.source) <= 5:
        return reason(IDENTITY, f"{where}: energy source {e.source!r} is unknown (dcgm:… or nvml:…)")
    if e.scope not in ("board", "wall") or e.method not in ("energy counter", "integrated power"):
        return reason(IDENTITY, f"{where}: energy of scope {e.scope!r} by method {e.method!r} is unknown")
    n = max(1, len(e.gpus))
    watts = e.joules / c.wall_seconds if c.wall_seconds > 0 and math.isfinite(c.wall_seconds) else math.nan
    if not (0 < watts <= MAX_WATTS_PER_GPU * n):
        return reason(PLAUSIBILITY, f"{where}: {e.joules:g} J over {c.wall_seconds:g} s is a mean {watts:g} W for "
                      f"{n} GPU(s), outside 0 < P ≤ {MAX_WATTS_PER_GPU:,.0f} W per GPU")
    idle = e.idle_watts
    if idle is not None and (not math.isfinite(idle) or idle < 0 or idle > watts):
        return reason(PLAUSIBILITY, f"{where}: idle baseline {idle!r} W against a measured mean {watts:g} W "
                      "(the idle baseline is finite, not negative, and at most what the cell drew)")
    return None


def energy_defects(record: EnergyRecord) -> list[str]:
    """What makes one record's energy readings impossible or unusable (the first per kind of rule): joules finite
    and ≥ 0, a known source, scope and method, a mean power 0 < P ≤ 3 kW per GPU counted, an idle baseline at most
    the measured power, and — once any cell carries energy — every cell, all of one (scope, method, source)."""
    cells = list(record.cells)
    with_energy = [c for c in cells if c.energy is not None]
    if not with_energy:
        return []
    out: list[str] = []
    if len(with_energy) != len(cells):
        miss = next(c for c in cells if c.energy is None)
        out.append(reason(COMPLETENESS, f"{_where(record.arm, miss)} has no energy reading while "
                          f"{len(with_energy)} of the record's {len(cells)} cells have one (a meter that dropped "
                          "out is no reading)"))
    for c in with_energy:
        assert c.energy is not None
        bad = _cell_energy_defect(record.arm, c, c.energy)
        if bad is not None:
            out.append(bad)
            break
    labels = sorted({energy_label(c.energy) for c in with_energy if c.energy is not None})
    if len(labels) > 1:
        out.append(reason(IDENTITY, f"the {record.arm} record mixes energy readings "
                          f"{' and '.join(' / '.join(x) for x in labels[:2])}: board and wall, DCGM, NVML and "
                          "integrated power are not one quantity"))
    return out


def energy_pair_defects(base: EnergyRecord, spec: EnergyRecord) -> list[str]:
    """What keeps two records' energy from being compared: both arms read energy, but not of the same scope,
    method and source (board vs wall, DCGM vs NVML vs integrated power measure different things). Energy on one
    arm only is not a defect of the pair: tokens per joule are then not judged (`one_arm_energy`)."""
    def labels(r: EnergyRecord) -> set[tuple[str, str, str]]:
        return {energy_label(c.energy) for c in r.cells if c.energy is not None}

    lb, ls = labels(base), labels(spec)
    if lb and ls and lb != ls:
        show = " / ".join
        return [reason(IDENTITY, f"energy was read differently on the arms: baseline {show(sorted(lb)[0])}, "
                       f"speculative {show(sorted(ls)[0])}; tokens per joule of one are not comparable to the "
                       "other's")]
    return []


def one_arm_energy(base: EnergyRecord, spec: EnergyRecord) -> str | None:
    """Why tokens per joule are not judged when only one arm read energy (a reason of completeness), else None."""
    has = {r.arm: any(c.energy is not None for c in r.cells) for r in (base, spec)}
    if has[base.arm] == has[spec.arm]:
        return None
    only = base.arm if has[base.arm] else spec.arm
    return reason(COMPLETENESS, f"energy was read on the {only} arm only: tokens per joule not judged")
