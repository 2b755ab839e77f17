"""The memory bill of a rollout plan: weights of the target and the drafter, KV bytes per
token of both (the drafter from its own geometry and context scope), the pool the engine is
predicted to allocate with and without the drafter, the pool it reported it allocated
(never the configured ceiling), and each request mix's resident tokens
(concurrency × (prompt + output)).

Reads only the plan and the files it names. Exit codes: 0 ok, 3 invalid input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gate.commands._args import invalid
from gate.status import EXIT_PASS, InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plan", required=True, type=Path, help="rollout plan (YAML)")
    parser.add_argument("--format", choices=["json", "text"], default="text")


def _n(x: object) -> str:
    if x is None:
        return "unknown"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def _text(doc: dict) -> str:
    t, d, p, w = doc["target"], doc["drafter"], doc["pool"], doc["workload"]
    out = [f"target   {t['name'] or '?'}: KV {_n(t['kv_bytes_per_token'])} B/token, weights {_n(t['weights_bytes'])} B"
           + (f" ({t['weights_source']})" if t["weights_source"] else "")]
    if d:
        out.append(f"drafter  {d['name'] or d['method']} [{d['kind']}, {d['kv_scope']} scope]: KV "
                   f"{_n(d['kv_bytes_per_token'])} B/token, weights {_n(d['weights_bytes'])} B"
                   + (f" ({d['weights_source']})" if d["weights_source"] else ""))
    else:
        out.append("drafter  none")
    pt = p["predicted_tokens"]
    out.append(f"pool     predicted {_n(pt['with_drafter'])} tokens with the drafter, {_n(pt['without_drafter'])} "
               f"without; allocated {_n(p['allocated_tokens'])}"
               + (f" ({p['allocated_source']})" if p["allocated_source"] else "")
               + (f"; configured ceiling {_n(p['configured_max_total_tokens'])} (not the pool)"
                  if p["configured_max_total_tokens"] else ""))
    for m in w["mixes"]:
        out.append(f"mix      {m['name']}: {m['concurrency']} × ({_n(m['prompt_tokens'])} + {_n(m['output_tokens'])}) "
                   f"= {_n(m['demand_tokens'])} resident tokens")
    notes = t["notes"] + (d["notes"] if d else []) + p["notes"]
    out += [f"note     {n}" for n in notes]
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    from gate.bill.budget import compute_budget
    from gate.bill.facts import artifact_facts
    from gate.inputs.jsontext import dumps
    from gate.plan.model import load_plan

    try:
        plan = load_plan(args.plan)
        doc = compute_budget(plan, artifact_facts(plan)).to_json()
        text = dumps(doc, "budget") + "\n" if args.format == "json" else _text(doc)
    except InputError as e:  # PlanError, ConfigError, every reader's error, a non-finite number: one line, exit 3
        return invalid(str(e))
    sys.stdout.write(text)
    return EXIT_PASS
