"""Print a JSON Schema: `specgate schema plan` gives the rollout plan's (gate.plan.model.Plan).

Point an editor at it and it completes and checks plan keys: the YAML language server reads a
first line `# yaml-language-server: $schema=plan.schema.json` (a path relative to the plan, or a
URL). The committed copy is examples/plans/plan.schema.json, and every key's type, default, unit
and meaning (with the per-engine semantics) is in docs/reference/plan.md; both are generated from
the model by `make plan-reference`.

Exit codes: 0 ok, 3 invalid input.
"""

from __future__ import annotations

import argparse
import sys

from gate.commands._args import exit_invalid_on_usage_error, invalid
from gate.status import EXIT_PASS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    exit_invalid_on_usage_error(parser)
    parser.add_argument("what", choices=("plan",), metavar="plan", help="which schema (only: plan)")
    parser.add_argument("--out", metavar="FILE", help="write it to FILE instead of stdout")


def run(args: argparse.Namespace) -> int:
    from gate.plan.reference import schema_text

    text = schema_text()
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            return invalid(f"cannot write {args.out}: {e.strerror or e}")
        return EXIT_PASS
    sys.stdout.write(text)
    return EXIT_PASS
