"""The fleet table for people: text for a terminal, Markdown for a pull request or job summary.

Every pod that did not pass is listed by name with its reason (a missing pod is named, never
hidden in a count); passing pods are counted, and listed too when there are at most `show_passing`
of them. The whole table is always in `--format json`.
"""

from __future__ import annotations

from gate.fleet.table import FleetResult, PodRow
from gate.verdict import Status

COLUMNS = ("pod", "model", "windows", "below SLO", "L", "restarts", "engine up", "verdict")


def _f(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def _cells(r: PodRow) -> tuple[str, ...]:
    up = "—" if r.engine_up is None else ("yes" if r.engine_up else "no")
    return (r.pod, r.model or "—", str(r.windows), _f(r.below_slo_share, ".1%"), _f(r.acceptance_length, ".3f"),
            _f(r.restarts, ".0f"), up, r.status.value)


def _shown(fleet: FleetResult, show_passing: int) -> tuple[list[PodRow], int]:
    order = {Status.FAIL: 0, Status.INCONCLUSIVE: 1}
    bad = sorted((r for r in fleet.rows if r.status in order), key=lambda r: (order[r.status], r.pod))
    good = [r for r in fleet.rows if r.status not in order]
    if len(good) <= show_passing:
        return bad + good, 0
    return bad, len(good)


def to_text(fleet: FleetResult, show_passing: int = 20) -> str:
    rows, hidden = _shown(fleet, show_passing)
    head = (f"fleet {fleet.status.value.upper()} — {fleet.reason}\n"
            f"  {fleet.source} {fleet.selector}, {fleet.lookback_seconds:g} s in {fleet.window_seconds:g} s windows, "
            f"{fleet.queries} queries, {fleet.seconds:.2f} s")
    table = [COLUMNS, *(_cells(r) for r in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    lines = [head, ""]
    for i, row in enumerate(table):
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    for r in rows:
        if r.status is not Status.PASS and r.reason:
            lines.append(f"  {r.pod}: {r.status.value} — {r.reason}")
    if hidden:
        lines.append(f"  … and {hidden} passing pod(s) (every row: --format json)")
    if fleet.missing_pods:
        lines.append(f"  {fleet.missing_pods} expected pod(s) sent no series at all")
    return "\n".join(lines) + "\n"


def to_markdown(fleet: FleetResult, show_passing: int = 20) -> str:
    rows, hidden = _shown(fleet, show_passing)
    out = [f"**Fleet: {fleet.status.value}** — {fleet.reason}", "",
           "| " + " | ".join(COLUMNS) + " | reason |", "|" + "---|" * (len(COLUMNS) + 1)]
    for r in rows:
        cells = [c.replace("|", "\\|") for c in (*_cells(r), r.reason)]
        out.append("| " + " | ".join(cells) + " |")
    if hidden:
        out += ["", f"… and {hidden} passing pod(s); every row is in `--format json`."]
    if fleet.missing_pods:
        out += ["", f"{fleet.missing_pods} expected pod(s) sent no series at all."]
    return "\n".join(out) + "\n"
