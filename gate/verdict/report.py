"""Verdict renderings: a text table for people, JSON for machines, JUnit for CI, Markdown for PRs.

Why several: the same verdict lands in a terminal, a CI test report (one testcase per
budget line, so a failing line shows up by name) and a pull-request comment. A Prometheus
fleet's per-pod table (gate.evidence.fleet) follows the lines in text and Markdown; JSON holds every row. Every format
says when `--allow-inconclusive` turned an inconclusive exit into 0.
"""

from __future__ import annotations

import textwrap
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from gate.evidence.fleet import render as fleet_render
from gate.inputs.jsontext import dumps, printable
from gate.verdict.verdict import Verdict

ALLOWED_NOTE = "inconclusive allowed by --allow-inconclusive: exit code 0"


def _notice(v: Verdict) -> str | None:
    return ALLOWED_NOTE if v.inconclusive_allowed else None


def _fleet(v: Verdict) -> dict[str, Any] | None:
    """The Prometheus fleet's per-pod table, when the acceptance line judged one (gate.evidence.fleet)."""
    line = v.checks.get("acceptance")
    fleet = line.values.get("fleet") if line is not None else None
    return fleet if isinstance(fleet, dict) else None


def to_json(v: Verdict) -> str:
    return dumps(v.to_json(), "check report", ensure_ascii=False) + "\n"


def to_text(v: Verdict, width: int = 110) -> str:
    lines = [f"specgate check — plan {printable(v.plan_name or '?')} — phase {v.phase}", ""]
    name_w = max(len(n) for n in v.checks) if v.checks else 10
    stat_w = max(len(r.status.value) for r in v.checks.values()) if v.checks else 12
    head = f"{'line':<{name_w}}  {'status':<{stat_w}}  reason"
    lines += [head, "-" * min(width, max(len(head), 60))]
    indent = name_w + stat_w + 4
    for name, r in v.checks.items():
        wrapped = textwrap.wrap(printable(r.reason), width=max(width - indent, 40)) or [""]
        lines.append(f"{name:<{name_w}}  {r.status.value:<{stat_w}}  {wrapped[0]}")
        lines += [" " * indent + w for w in wrapped[1:]]
    fleet = _fleet(v)
    if fleet is not None:
        lines += ["", *(printable(x) for x in fleet_render.to_text(fleet).rstrip("\n").split("\n"))]
    lines += ["", f"decision: {v.decision.value.upper()} (exit {v.exit_code})"]
    if _notice(v):
        lines.append(f"note: {_notice(v)}")
    missing = v.run_record.missing
    if missing:
        lines.append(f"run record: {len(missing)} field(s) unknown: {', '.join(missing)}")
    return "\n".join(lines) + "\n"


def to_markdown(v: Verdict) -> str:
    icon = {"pass": "✅", "warn": "⚠️", "fail": "❌", "inconclusive": "❔", "n/a": "➖"}
    out = [f"### specgate: **{v.decision.value}** — plan `{printable(v.plan_name or '?')}` ({v.phase})", ""]
    if _notice(v):
        out += [f"> {_notice(v)}", ""]
    out += ["| line | status | reason |", "|---|---|---|"]
    for name, r in v.checks.items():
        reason = printable(r.reason.replace("|", "\\|").replace("\n", " "))
        out.append(f"| {name} | {icon.get(r.status.value, '')} {r.status.value} | {reason} |")
    fleet = _fleet(v)
    if fleet is not None:
        out += ["", fleet_render.to_markdown(fleet).rstrip("\n")]
    missing = v.run_record.missing
    if missing:
        out += ["", f"Run record: unknown {', '.join(f'`{m}`' for m in missing)}."]
    return "\n".join(out) + "\n"


def to_junit(v: Verdict) -> str:
    """One testcase per line: fail -> <failure>, inconclusive -> <error> (or <skipped> when allowed)."""
    failures = sum(1 for r in v.checks.values() if r.status.value == "fail")
    incon = [n for n, r in v.checks.items() if r.status.value == "inconclusive"]
    errors = 0 if v.allow_inconclusive else len(incon)
    skipped = (len(incon) if v.allow_inconclusive else 0) + sum(1 for r in v.checks.values() if r.status.value == "n/a")
    suite = f"specgate.{v.plan_name or 'plan'}.{v.phase}"
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="specgate" tests="{len(v.checks)}" failures="{failures}" errors="{errors}">',
           f'  <testsuite name={quoteattr(suite)} tests="{len(v.checks)}" failures="{failures}" errors="{errors}" '
           f'skipped="{skipped}">',
           f'    <properties><property name="decision" value="{v.decision.value}"/>'
           f'<property name="allow_inconclusive" value="{str(v.allow_inconclusive).lower()}"/></properties>']
    for name, r in v.checks.items():
        s = r.status.value
        out.append(f'    <testcase classname={quoteattr(suite)} name={quoteattr(name)}>')
        msg = quoteattr(f"{s}: {r.reason}")
        if s == "fail":
            out.append(f'      <failure message={msg} type="fail">{escape(r.reason)}</failure>')
        elif s == "inconclusive" and not v.allow_inconclusive:
            out.append(f'      <error message={msg} type="inconclusive">{escape(r.reason)}</error>')
        elif s == "inconclusive":
            out.append(f'      <skipped message={quoteattr(f"{s} ({ALLOWED_NOTE}): {r.reason}")}/>')
        elif s == "n/a":
            out.append(f"      <skipped message={msg}/>")
        out.append(f"      <system-out>{escape(f'{s}: {r.reason}')}</system-out>")
        out.append("    </testcase>")
    out += ["  </testsuite>", "</testsuites>"]
    return "\n".join(out) + "\n"


def render(v: Verdict, fmt: str) -> str:
    if fmt == "json":
        return to_json(v)
    if fmt == "junit":
        return to_junit(v)
    if fmt == "markdown":
        return to_markdown(v)
    return to_text(v)
