"""Judge a rollout plan: the five budget lines (artifacts, kv_pool, acceptance, staging, codesign)
and the per-window acceptance-length SLO.

Phases: `pre` (default; before the drafter is switched on: static lines plus any canary or
captured evidence) and `post` (the live per-window SLO is required; missing data is
inconclusive). Evidence: the plan's own sources, plus `--metrics` (capture files in time
order, an exporter URL answering /api/v1/windows, or an engine URL scraped twice or more
over the SLO window) and `--prometheus` (history of the specgate_* counters, per pod).

Exit codes: 0 pass, 1 fail, 2 inconclusive (0 with --allow-inconclusive), 3 invalid input.
With --format json, stdout holds only the JSON document; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gate.commands._args import invalid


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plan", required=True, type=Path, help="rollout plan (YAML)")
    parser.add_argument("--phase", choices=["pre", "post"], default="pre",
                        help="pre: before the switch (default); post: live per-window SLO required")
    parser.add_argument("--metrics", nargs="+", action="extend", default=[], metavar="URL|FILE",
                        help="capture files (time order), an exporter URL or an engine URL; repeatable")
    parser.add_argument("--prometheus", metavar="URL", help="Prometheus (or Thanos/Mimir) base URL; auth from the plan")
    parser.add_argument("--format", choices=["text", "json", "junit", "markdown"], default="text")
    parser.add_argument("--out", type=Path, help="write the report to FILE instead of stdout")
    parser.add_argument("--record", type=Path, help="write the run record (JSON) to FILE")
    parser.add_argument("--allow-inconclusive", action="store_true",
                        help="exit 0 when the decision is inconclusive (the report says so)")
    parser.add_argument("--previous", type=Path, metavar="RECORD",
                        help="the last run record (--record of an earlier check): a changed target revision needs "
                             "acceptance evidence newer than it; a changed drafter revision is named")


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise OSError(f"cannot write {path}: {e.strerror or e}") from None


def run(args: argparse.Namespace) -> int:
    from gate.evidence.previous import load_previous
    from gate.inputs.jsontext import dumps
    from gate.plan.model import load_plan
    from gate.status import InputError
    from gate.verdict.evaluate import evaluate
    from gate.verdict.report import render

    try:
        plan = load_plan(args.plan)
        previous = load_previous(args.previous, plan) if args.previous else None  # refused unless this plan's
        verdict = evaluate(plan, phase=args.phase, metrics=args.metrics, prometheus=args.prometheus,
                           allow_inconclusive=args.allow_inconclusive, previous=previous)
        # No NaN/Infinity in any JSON written (gate.inputs.jsontext.dumps): one line, exit 3 instead.
        text = render(verdict, args.format)
        record = (dumps(verdict.run_record.to_json(), "run record", ensure_ascii=False) + "\n"
                  if args.record else None)
    except InputError as e:  # PlanError, ConfigError and every loader's error: one line, exit 3
        return invalid(str(e))
    try:
        if args.record and record is not None:
            _write(args.record, record)
        if args.out:
            _write(args.out, text)
            print(f"specgate: {verdict.decision.value} (exit {verdict.exit_code}); report in {args.out}",
                  file=sys.stderr)
        else:
            sys.stdout.write(text)
    except OSError as e:
        return invalid(str(e))
    if verdict.inconclusive_allowed and args.format == "json":
        print("specgate: inconclusive allowed by --allow-inconclusive: exit code 0", file=sys.stderr)
    return verdict.exit_code
