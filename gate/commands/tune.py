"""Choose the speculation depth k before deploying: acceptance by depth, cost by depth and
concurrency, predicted speedup with its band, the best k and the crossover concurrency.

Acceptance: vLLM accepts drafted tokens prefix-wise, so one run at depth k gives
L(k') = 1 + sum_{i<k'} accepted_i / drafts for every k' <= k with no model (basis `exact`,
`measured` at k). Beyond k, L is extrapolated by a geometric decay of the conditional acceptance
p_i / p_(i-1), with a low-high band (basis `extrapolated`, never a measurement). Where only L is
known (SGLang gauges) depth cannot be resolved.

Cost: t_cycle(k, B) = t_verify(k, B) + k * t_draft(B), fitted from cycles at two or more k, or
declared at one k (then the t_verify/t_draft split is an assumption: --draft-step-ms LOW[:HIGH],
default 0 .. (cycle - step) / k). Speedup = L(k) * t_step(B) / t_cycle(k, B).

Sources: --captures BEFORE AFTER (engine /metrics capture files, with --target-step-ms and
--verify-cycle-ms for costs), --plan PLAN (its capture groups and `costs`), --input FILE (a tune
input file: a plan plus the declared draft-step band, examples/tune/), --probe FILE ... (probe
records of `specgate probe`, baseline and speculative arms at several k and concurrencies).
--exporter URL (a specgate exporter: its lifetime per-position counters from /metrics).
Not supported yet: --prometheus URL (the gate's Prometheus evidence gives windows of L, not
per-position counters); use --exporter, or capture the engine's /metrics twice and use --captures.

Exit codes: 0 ok, 3 invalid input. With --format json, stdout holds only the JSON document.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gate.status import EXIT_INVALID

DEFAULT_K_MAX = 8


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return v


def _ms(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of milliseconds") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return v


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_argument_group("sources (at least one)")
    src.add_argument("--captures", nargs="+", type=Path, metavar="FILE",
                     help="engine /metrics captures BEFORE AFTER (more: consecutive windows, summed)")
    src.add_argument("--plan", type=Path, help="rollout plan: its capture groups and step costs")
    src.add_argument("--input", type=Path, metavar="FILE", help="tune input file (a plan + declared draft-step band)")
    src.add_argument("--probe", nargs="+", type=Path, default=[], metavar="FILE",
                     help="probe records (specgate probe): baseline and speculative arms")
    src.add_argument("--exporter", metavar="URL", help="a specgate exporter: lifetime per-position counters")
    src.add_argument("--prometheus", metavar="URL", help="not supported yet (no per-position counters in its windows)")
    parser.add_argument("--point", help="name of the operating point the captures measured (e.g. 2K)")
    parser.add_argument("--k-max", type=_positive, metavar="N", help=f"largest depth to predict (default {DEFAULT_K_MAX})")
    parser.add_argument("--concurrency", nargs="+", type=_positive, default=[], metavar="C",
                        help="report only these concurrencies (from probe cells; tune never extrapolates in B)")
    parser.add_argument("--target-step-ms", type=_ms, metavar="MS", help="declared plain decode step per sequence")
    parser.add_argument("--verify-cycle-ms", type=_ms, metavar="MS", help="declared verify cycle at the measured k")
    parser.add_argument("--draft-step-ms", metavar="LOW[:HIGH]",
                        help="declared band of one draft step (ms) where costs are known at one k only")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="write a PNG of predicted speedup against k")


def _err(msg: str) -> int:
    print(f"specgate: error: {msg}", file=sys.stderr)
    return EXIT_INVALID


def run(args: argparse.Namespace) -> int:
    from gate.plan.model import PlanError, load_plan
    from gate.tune.cost import cycle_models
    from gate.tune.depth import TuneInputError, curve_for_point
    from gate.tune.inputs import (
        TuneInputs,
        declared_costs,
        from_captures,
        from_exporter,
        from_plan,
        load_tune_file,
        parse_draft_band,
    )
    from gate.tune.predict import predict
    from gate.tune.report import to_json, to_text

    if args.prometheus:
        return _err("tune --prometheus: not supported yet (its windows carry L, not per-position counters); use "
                    "--exporter URL or capture the engine's /metrics twice and use --captures BEFORE AFTER")
    if not (args.captures or args.plan or args.input or args.probe or args.exporter):
        return _err("tune needs a source: --captures BEFORE AFTER, --plan PLAN, --input FILE, --probe FILE ... "
                    "or --exporter URL")
    try:
        inputs = TuneInputs()
        band = parse_draft_band(args.draft_step_ms)
        k_max = args.k_max
        plans = []
        if args.input:
            loaded = load_tune_file(args.input)
            plans.append(loaded.plan)
            band = band or loaded.band
            k_max = k_max or loaded.k_max
        if args.plan:
            plans.append(load_plan(args.plan))
        for plan in plans:
            got = from_plan(plan)
            inputs.counters += got.counters
            inputs.costs += got.costs
            inputs.notes += got.notes
            inputs.plan_k = inputs.plan_k or got.plan_k
        if args.captures:
            inputs.counters.append(from_captures(args.captures, args.point))
        if args.exporter:
            inputs.counters.append(from_exporter(args.exporter, point=args.point))
        if args.probe:
            from gate.tune.probes import from_probe_records

            got = from_probe_records(args.probe)
            inputs.counters += got.counters
            inputs.costs += got.costs
            inputs.notes += got.notes
        k_of = {c.point: c.k for c in inputs.counters}
        if args.target_step_ms is not None or args.verify_cycle_ms is not None:
            k = k_of.get(args.point) or (next(iter(k_of.values())) if len(k_of) == 1 else None) or inputs.plan_k
            inputs.costs += declared_costs(args.target_step_ms, args.verify_cycle_ms, k, args.point)
        if not inputs.counters:
            raise TuneInputError("no acceptance counters in the sources (a plan needs evidence.captures)")
        by_point: dict[str | None, list] = {}
        for c in inputs.counters:
            by_point.setdefault(c.point, []).append(c)
        k_max = k_max or max(DEFAULT_K_MAX, max(c.k for c in inputs.counters))
        curves = [curve_for_point(v, p, k_max) for p, v in by_point.items()]
        costs = inputs.costs
        if args.concurrency:
            have = {c.concurrency for c in costs}
            missing = [b for b in args.concurrency if b not in have]
            costs = [c for c in costs if c.concurrency in set(args.concurrency)]
            if missing:
                inputs.notes.append("no cost data at concurrency " + ", ".join(map(str, missing))
                                    + " (tune does not extrapolate in concurrency)")
        models = cycle_models(costs, band)
        if band is not None and not any(m.kind == "declared" for m in models):
            inputs.notes.append(f"{band.source}: not used (costs were fitted at two or more k, or none given)")
        if band is not None and any(m.kind == "declared" for m in models):
            inputs.notes.append(f"draft step band from {band.source}")
        result = predict(curves, models, k_max, inputs.notes)
        if args.plot:
            from gate.tune.plot import write_png

            write_png(result, args.plot)
    except (TuneInputError, PlanError) as e:
        return _err(str(e))
    if args.format == "json":
        sys.stdout.write(json.dumps(to_json(result), indent=2) + "\n")
    else:
        sys.stdout.write(to_text(result))
    if args.plot:
        print(f"specgate: picture written to {args.plot}", file=sys.stderr)
    return 0
