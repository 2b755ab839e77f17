"""Choose the speculation depth k before deploying: acceptance by depth, cost by depth and
concurrency, predicted speedup with its band, the best k and the crossover concurrency.

Acceptance: vLLM accepts drafted tokens prefix-wise, so one run at depth k gives
L(k') = 1 + sum_{i<k'} accepted_i / drafts for every k' <= k with no model (basis `exact`,
`measured` at k; `reported` there for counters someone reported, e.g. capture pages marked
`# specgate: reported: SOURCE`). Beyond k, L is extrapolated by a geometric decay of the conditional acceptance
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

Varying depth (issue 22): per-position counters from a run whose depth varied (Δdraft_tokens <
k · Δdrafts, a drafterless method, a plan's depth schedule) give L by depth as a lower bound (basis
`lower_bound`); `--basis exact` on such counters is refused (exit 3, the reason in one line).

--emit vllm|sglang|trtllm: the best k per band of batch sizes (k = 0 past the crossover) as a schedule
the engine runs (gate.tune.emit): vLLM's speculative-config fragment, SGLang's adaptive config,
TensorRT-LLM's draft_len_schedule. With --out FILE the fragment alone goes to FILE (vLLM:
`--speculative-config "$(cat FILE)"`) and stdout keeps the report; without --out (text format) stdout
holds the fragment alone and the bands' predicted speedups go to stderr.

Exit codes: 0 ok, 3 invalid input. With --format json, stdout holds only the JSON document.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gate.commands._args import exit_invalid_on_usage_error, positive_float, positive_int
from gate.model.depth import MAX_SPECULATIVE_DEPTH
from gate.model.engines import SCHEDULE_WRITERS
from gate.status import EXIT_INVALID


def _depth(text: str) -> int:
    """--k-max: a depth an engine can draft (1 .. MAX_SPECULATIVE_DEPTH); 100000000 was a MemoryError."""
    v = positive_int(text)
    if v > MAX_SPECULATIVE_DEPTH:
        raise argparse.ArgumentTypeError(f"{text!r} is deeper than any engine drafts (at most {MAX_SPECULATIVE_DEPTH})")
    return v


def add_arguments(parser: argparse.ArgumentParser) -> None:
    exit_invalid_on_usage_error(parser)  # a bad flag (--k-max 100000000, --target-step-ms nan) is one line, exit 3
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
    parser.add_argument("--k-max", type=_depth, metavar="N",
                        help=f"largest depth to predict, 1 .. {MAX_SPECULATIVE_DEPTH} (default 8, or the measured or "
                             "planned k if deeper)")
    parser.add_argument("--concurrency", nargs="+", type=positive_int, default=[], metavar="C",
                        help="report only these concurrencies (from probe cells; tune never extrapolates in B)")
    parser.add_argument("--target-step-ms", type=positive_float, metavar="MS", help="declared plain decode step per sequence")
    parser.add_argument("--verify-cycle-ms", type=positive_float, metavar="MS", help="declared verify cycle at the measured k")
    parser.add_argument("--draft-step-ms", metavar="LOW[:HIGH]",
                        help="declared band of one draft step (ms) where costs are known at one k only")
    parser.add_argument("--basis", choices=("exact", "lower_bound"),
                        help="the acceptance basis to stand behind: exact is refused on counters from a run whose "
                             "depth varied (default: exact on a fixed depth, lower_bound where it varied)")
    parser.add_argument("--emit", choices=SCHEDULE_WRITERS,  # the profiles that write schedules
                        help="write the best k per band of batch sizes as a schedule the engine runs (needs probe "
                             "records at several concurrencies)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="with --emit: write the engine fragment alone here")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="write a PNG of predicted speedup against k")
    parser.add_argument("--context-plot", type=Path, metavar="FILE",
                        help="probe records swept over prompt lengths (probe --prompt-tokens A,B,C): write a PNG of "
                             "the measured speedup and engine step against context")


def _err(msg: str) -> int:
    print(f"specgate: error: {msg}", file=sys.stderr)
    return EXIT_INVALID


def run(args: argparse.Namespace) -> int:
    """Parse the sources into `TuneInputs`, call `gate.model.speedup.tune.run`, print (the orchestration is there,
    once)."""
    from gate.inputs.jsontext import dumps
    from gate.model.speedup import context, tune
    from gate.status import InputError
    from gate.tune.inputs import sources
    from gate.tune.report import context_json, to_json, to_text

    if args.prometheus:
        return _err("tune --prometheus: not supported yet (its windows carry L, not per-position counters); use "
                    "--exporter URL or capture the engine's /metrics twice and use --captures BEFORE AFTER")
    if not (args.captures or args.plan or args.input or args.probe or args.exporter):
        return _err("tune needs a source: --captures BEFORE AFTER, --plan PLAN, --input FILE, --probe FILE ... "
                    "or --exporter URL")
    if args.out and not args.emit:
        return _err("tune --out FILE writes the --emit fragment: give --emit vllm|sglang|trtllm")
    side = ""
    try:
        got = sources(captures=args.captures, plan=args.plan, tune_input=args.input, probes=args.probe,
                      exporter=args.exporter, point=args.point, target_step_ms=args.target_step_ms,
                      verify_cycle_ms=args.verify_cycle_ms, draft_step_ms=args.draft_step_ms)
        result = tune.run(got.inputs, args.k_max or got.k_max, got.band, args.concurrency, basis=args.basis)
        if args.plot:
            from gate.tune.plot import write_png

            write_png(result, args.plot)
        doc = to_json(result)
        swept = context.sweep(got.inputs.context)
        if swept is not None:
            doc["context"] = context_json(swept)
        elif args.context_plot:
            raise InputError("--context-plot needs probe records of at least two prompt lengths (probe "
                             "--prompt-tokens A,B,C)")
        if args.context_plot and swept is not None:
            from gate.tune.plot import write_context_png

            write_context_png(swept, args.context_plot)
        text = ""
        if args.emit:
            from gate.tune.emit import emit

            emitted = emit(result, args.emit, point=args.point, speculative_configs=got.inputs.speculative_configs,
                           evidence=got.inputs.speculative_evidence)
            doc["emit"] = emitted.to_json()
            fragment = dumps(emitted.fragment, "tune --emit", indent=None) + "\n"
            if args.out:
                args.out.write_text(fragment, encoding="utf-8")
                side = f"specgate: {args.emit} schedule written to {args.out}\n"
                text = emitted.text()
            elif args.format == "text":
                side = emitted.text()
            if swept is not None:
                from gate.tune.emit import context_advice

                advice = context_advice(swept, args.emit)
                doc["emit"]["context_advice"] = advice.rstrip("\n").split("\n")
                if args.out:
                    text += advice
                elif args.format == "text":
                    side += advice
        # No NaN/Infinity in the JSON (gate.inputs.jsontext.dumps): one line, exit 3 instead.
        if args.format == "json":
            text = dumps(doc, "tune") + "\n"
        elif args.emit and not args.out:
            text = fragment
        else:
            text = to_text(result) + ("\n" + swept.text() + "\n" if swept is not None else "") + (
                "\n" + text if text else "")
    except InputError as e:
        return _err(str(e))
    except OSError as e:
        return _err(f"tune --out {args.out}: {e.strerror or e}")
    sys.stdout.write(text)
    if side:
        sys.stderr.write(side)
    if args.plot:
        print(f"specgate: picture written to {args.plot}", file=sys.stderr)
    if args.context_plot:
        print(f"specgate: context picture written to {args.context_plot}", file=sys.stderr)
    return 0
