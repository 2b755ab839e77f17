"""Sub-check 11, the capture fingerprint of simulated acceptance (issue 37 item 1): a warning, never a blocker.

Why: a capture shows no knob (vLLM's `rejection_sample_method`, SGLang's and TensorRT-LLM's environment), so
simulation is refused only where the plan, the chart or the pod says it (the `simulated` invariant). What a
capture can show is the simulation's shape: a simulating engine accepts draft position i with a fixed
probability, so its per-position conditional rates (accepted at i / accepted at i − 1, drafts at position 1)
vary across windows by binomial noise alone, while a real drafter's rates move with the prompts each window
served (over-dispersion). When every position's rates across at least `MIN_WINDOWS` capture windows stay
within binomial noise (Pearson χ² at or below its 99.9 % quantile on W − 1 degrees of freedom, Wilson-Hilferty;
a real drafter's is typically ten times that), the line says "possibly simulated",
naming the rates and the knobs to check. Homogeneous real traffic can look the same, so it only warns.
"""

from __future__ import annotations

from collections.abc import Sequence

from gate.checks.acceptance.finding import Finding
from gate.checks.base import CheckContext
from gate.model.speedup.counters import PositionCounters
from gate.status import Status

MIN_WINDOWS = 4  # fewer windows cannot tell noise from prompts
MIN_TRIALS = 20.0  # drafts reaching a position in a window, for that window to count at that position
Z_999 = 3.090  # the standard normal's 99.9 % quantile: binomial noise alone stays below the bound 999 times in 1000


def noise_bound(df: int) -> float:
    """χ²'s 99.9 % quantile on `df` degrees of freedom (Wilson-Hilferty), as a dispersion χ²/df."""
    c = 2.0 / (9.0 * df)
    return (1.0 - c + Z_999 * c ** 0.5) ** 3


def constant_rates(windows: Sequence[PositionCounters]) -> tuple[tuple[float, ...], float, int] | None:
    """(the pooled conditional rate per position, the largest dispersion, windows) when every position's rate stays
    within binomial noise across the windows, else None (not constant, or too few windows to tell)."""
    usable = [w for w in windows if w.accepted_per_position and w.drafts >= MIN_TRIALS]
    if not usable or len({w.k for w in usable}) != 1 or len(usable) < MIN_WINDOWS:
        return None
    rates: list[float] = []
    worst = 0.0
    for i in range(usable[0].k):
        cells = [(w.drafts if i == 0 else w.accepted_per_position[i - 1], w.accepted_per_position[i]) for w in usable]
        cells = [(n, a) for n, a in cells if n >= MIN_TRIALS]
        if len(cells) < MIN_WINDOWS:
            break  # too few windows reach this position: judged on the ones before it
        p = sum(a for _, a in cells) / sum(n for n, _ in cells)
        rates.append(p)
        if p <= 0.0 or p >= 1.0:
            continue  # never or always accepted in every window: no variation at all
        chi2 = sum((a - n * p) ** 2 / (n * p * (1.0 - p)) for n, a in cells)
        dispersion = chi2 / (len(cells) - 1)
        if dispersion > noise_bound(len(cells) - 1):
            return None
        worst = max(worst, dispersion)
    return (tuple(rates), worst, len(usable)) if rates else None


def sub(ctx: CheckContext) -> Finding:
    parts: list[str] = []
    values: list[dict[str, object]] = []
    for ev in ctx.metrics.positions:
        found = constant_rates(ev.windows)
        if found is None:
            continue
        rates, worst, n = found
        shown = ", ".join(f"{r:.3f}" for r in rates)
        parts.append(f"possibly simulated acceptance in {ev.source}: the per-position conditional rates ({shown}) "
                     f"stay constant across {n} capture windows (dispersion at most {worst:.2f}, within "
                     "binomial noise alone; a real drafter's vary with the prompts): check the engine's "
                     "rejection_sample_method, SGLANG_SIMULATE_ACC_LEN and "
                     "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS")
        values.append({"source": ev.source, "point": ev.point, "rates": list(rates), "dispersion": worst,
                       "windows": n})
    if not parts:
        return Finding()
    return Finding(Status.WARN, "; ".join(parts), {"fingerprint": values})
