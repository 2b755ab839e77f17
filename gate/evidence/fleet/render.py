"""The fleet table for people: text for a terminal, Markdown for a pull request or job summary.

It renders the judged table's JSON view (`gate.checks.acceptance.fleet_rule.FleetVerdict.to_json()`,
what `checks.acceptance.values.fleet` holds: each pod's status and reason come from the check), so
the report renders a verdict without the evidence objects, and nothing here judges. Every pod that did not pass is listed by
name with its reason (a missing pod is named, never hidden in a count); passing pods are counted,
and listed too when there are at most `show_passing` of them. Every row is in `--format json`.
"""

from __future__ import annotations

from typing import Any

COLUMNS = ("pod", "model", "windows", "below SLO", "L", "restarts", "engine up", "verdict")
_ORDER = {"fail": 0, "inconclusive": 1}


def _f(x: Any, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def _cells(r: dict[str, Any]) -> tuple[str, ...]:
    up = r.get("engine_up")
    return (str(r["pod"]), str(r.get("model") or "—"), str(r["windows"]), _f(r.get("below_slo_share"), ".1%"),
            _f(r.get("acceptance_length"), ".3f"), _f(r.get("restarts"), ".0f"),
            "—" if up is None else ("yes" if up else "no"), str(r["status"]))


def _shown(fleet: dict[str, Any], show_passing: int) -> tuple[list[dict[str, Any]], int]:
    pods = fleet.get("pods") or []
    bad = sorted((r for r in pods if r["status"] in _ORDER), key=lambda r: (_ORDER[r["status"]], r["pod"]))
    good = [r for r in pods if r["status"] not in _ORDER]
    if len(good) <= show_passing:
        return bad + good, 0
    return bad, len(good)


def _head(fleet: dict[str, Any]) -> str:
    return (f"{fleet['source']} {fleet['selector']}: {fleet['lookback_seconds']:g} s in {fleet['window_seconds']:g} s "
            f"windows, {fleet['queries']} queries, {fleet['seconds']:.2f} s"
            + (f", {fleet['path']} path" if fleet.get("path") else "")
            + (f" ({fleet['path_reason']})" if fleet.get("path_reason") else ""))


def to_text(fleet: dict[str, Any], show_passing: int = 20) -> str:
    rows, hidden = _shown(fleet, show_passing)
    lines = [f"fleet {str(fleet['status']).upper()} — {fleet['reason']}", f"  {_head(fleet)}", ""]
    table = [COLUMNS, *(_cells(r) for r in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    for i, row in enumerate(table):
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    lines += [f"  {r['pod']}: {r['status']} — {r['reason']}" for r in rows if r["status"] in _ORDER]
    if hidden:
        lines.append(f"  … and {hidden} passing pod(s) (every row: --format json)")
    if fleet.get("missing_pods"):
        lines.append(f"  {fleet['missing_pods']} expected pod(s) sent no series at all")
    return "\n".join(lines) + "\n"


def to_markdown(fleet: dict[str, Any], show_passing: int = 20) -> str:
    rows, hidden = _shown(fleet, show_passing)
    out = [f"**Fleet: {fleet['status']}** — {fleet['reason']}", "", f"_{_head(fleet)}_", "",
           "| " + " | ".join(COLUMNS) + " | reason |", "|" + "---|" * (len(COLUMNS) + 1)]
    for r in rows:
        cells = [c.replace("|", "\\|") for c in (*_cells(r), str(r.get("reason") or ""))]
        out.append("| " + " | ".join(cells) + " |")
    if hidden:
        out += ["", f"… and {hidden} passing pod(s); every row is in `--format json`."]
    if fleet.get("missing_pods"):
        out += ["", f"{fleet['missing_pods']} expected pod(s) sent no series at all."]
    return "\n".join(out) + "\n"
