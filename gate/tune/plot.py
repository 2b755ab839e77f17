"""The picture: predicted speedup against k, one line per operating point and concurrency.

Why these marks: filled markers where L is measured, hollow where it is exact arithmetic below the
measured depth, a dashed line and a shaded band where it is extrapolated or the cost split is an
assumption; the horizontal line at 1 is "speculation pays". matplotlib is the `tune` extra.
"""

from __future__ import annotations

from pathlib import Path

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
