"""The pictures: predicted speedup against k, one line per operating point and concurrency; and (issue 39) the
measured speedup against context with the engine's step times.

Why these marks: filled markers where L is measured, hollow where it is exact arithmetic below the
measured depth, a dashed line and a shaded band where it is extrapolated or the cost split is an
assumption; the horizontal line at 1 is "speculation pays". matplotlib is the `tune` extra.
"""

from __future__ import annotations

from pathlib import Path

from gate.model.speedup.context import ContextSweep
from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.predict import TuneResult


def write_png(result: TuneResult, path: Path, title: str | None = None) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TuneInputError("--plot needs matplotlib: pip install 'specgate[tune]'") from None
    groups = [g for g in result.groups()
              if any(p.speedup is not None for p in result.points if (p.point, p.concurrency) == g)]
    if not groups:
        raise TuneInputError("--plot: no speedup to draw (no step costs given)")
    fig, ax = plt.subplots(figsize=(7.0, 4.2), dpi=110)
    for i, (point, conc) in enumerate(groups):
        cells = [p for p in result.points if (p.point, p.concurrency) == (point, conc) and p.speedup is not None]
        ys = {p.k: float(p.speedup or 0.0) for p in cells}
        color = f"C{i % 10}"
        label = ", ".join(x for x in (point, None if conc is None else f"B={conc}") if x) or "speedup"
        ks = [p.k for p in cells]
        ax.fill_between(ks, [p.speedup_low or 0 for p in cells], [p.speedup_high or 0 for p in cells],
                        color=color, alpha=0.15, linewidth=0)
        known = [p for p in cells if p.acceptance_basis != "extrapolated"]
        ext = [p for p in cells if p.acceptance_basis == "extrapolated"]
        if known:
            ax.plot([p.k for p in known], [ys[p.k] for p in known], "-", color=color, label=label)
        if ext:
            joint = ([known[-1]] if known else []) + ext
            ax.plot([p.k for p in joint], [ys[p.k] for p in joint], "--", color=color,
                    label=None if known else label)
        for p in cells:
            face = color if p.acceptance_basis in ("measured", "reported") else "white"
            ax.plot([p.k], [ys[p.k]], "o", color=color, markerfacecolor=face, markersize=6)
        best = next((b.k for b in result.best if (b.point, b.concurrency) == (point, conc)), None)
        if best is not None:
            top = next(p for p in cells if p.k == best)
            ax.annotate(f"best k={best}", (top.k, top.speedup or 0), textcoords="offset points", xytext=(4, 6),
                        color=color, fontsize=8)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("speculation depth k (num_speculative_tokens)")
    ax.set_ylabel("predicted speedup  L(k)·t_step / t_cycle(k)")
    ax.set_title(title or "specgate tune: predicted speedup by depth", fontsize=10)
    ax.text(0.01, 0.01, "filled: measured k · hollow: exact below it · dashed: extrapolated · band: low–high",
            transform=ax.transAxes, fontsize=7, color="grey")
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    try:
        fig.savefig(path, format="png", metadata={"Software": None})
    except OSError as e:
        raise TuneInputError(f"--plot: cannot write {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)


def write_context_png(sweep: ContextSweep, path: Path, title: str | None = None) -> None:
    """Seed 004's figure: measured speedup against prompt length, one line per (concurrency, k), the range of the
    repetitions shaded, and the engine's own step time beside it (the target step, the verify cycle)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TuneInputError("--context-plot needs matplotlib: pip install 'specgate[tune]'") from None
    lines = sorted({(p.concurrency, p.k) for p in sweep.points if p.speedup is not None})
    if not lines:
        raise TuneInputError("--context-plot: no speedup to draw (a baseline and a speculative arm at each length)")
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.0, 4.2), dpi=110)
    for i, (conc, k) in enumerate(lines):
        pts = sorted((p for p in sweep.points if (p.concurrency, p.k) == (conc, k) and p.speedup is not None),
                     key=lambda p: p.context)
        color = f"C{i % 10}"
        xs = [p.context for p in pts]
        ax.fill_between(xs, [p.speedup_low or 0 for p in pts], [p.speedup_high or 0 for p in pts], color=color,
                        alpha=0.15, linewidth=0)
        ax.plot(xs, [p.speedup or 0 for p in pts], "o-", color=color, label=f"B={conc}, k={k} (measured)")
        for p in pts:
            if p.acceptance_length is not None:
                ax.annotate(f"L {p.acceptance_length:.2f}", (p.context, p.speedup or 0), textcoords="offset points",
                            xytext=(4, 6), color=color, fontsize=7)
    for i, (conc, k) in enumerate(sorted({(p.concurrency, p.k) for p in sweep.points if p.step_ms is not None})):
        pts = sorted((p for p in sweep.points if (p.concurrency, p.k) == (conc, k) and p.step_ms is not None),
                     key=lambda p: p.context)
        bx.plot([p.context for p in pts], [p.step_ms or 0 for p in pts], "s-" if k else "o--", color=f"C{i % 10}",
                label=f"B={conc}, " + (f"k={k}: verify cycle" if k else "baseline: target step"))
    ax.axhline(1.0, color="grey", linewidth=0.8)
    for a in (ax, bx):
        a.set_xscale("log")
        a.set_xlabel("prompt tokens (context)")
        a.grid(alpha=0.3)
        a.legend(fontsize=8, loc="best")
    ax.set_ylabel("speedup (served rate, speculative / baseline)")
    bx.set_ylabel("engine step (ms, its own inter-token latency)")
    ax.set_title(title or "specgate tune: speedup against context", fontsize=10)
    bx.set_title("step and verify cycle against context", fontsize=10)
    notes = [f"B={d.concurrency} k={d.k}: target step +{d.target_growth_ms:.2f} ms, cycle +{d.cycle_growth_ms:.2f} ms"
             f" -> draft +{d.draft_step_growth_ms:.3f} ms/step"
             + ("" if d.draft_share is None else f" ({100 * d.draft_share:.1f} % of the target's)")
             for d in sweep.decompositions[:2]]
    ax.text(0.01, 0.01, "\n".join(["band: slowest..fastest repetition", *notes]), transform=ax.transAxes,
            fontsize=6, color="grey")
    fig.tight_layout()
    try:
        fig.savefig(path, format="png", metadata={"Software": None})
    except OSError as e:
        raise TuneInputError(f"--context-plot: cannot write {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
