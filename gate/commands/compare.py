"""Does speculation pay? Compare a baseline probe record with a speculative one.

Per (mix, concurrency): the served-rate speedup (ratio of medians of tokens/s over the
repetitions), speedup_low/speedup_high with their interval_kind ("observed_range": the min and
max ratios, a range and not a confidence interval; a bootstrap interval only when both arms
have >= 10 repetitions), the one-sided exact Mann-Whitney U p-value, the measured break-even
L* = L x TPOT_spec / TPOT_base where the speculative arm's acceptance is known, and a verdict:
  pays          significantly faster (p < alpha), and by at least --min-speedup when given
  does_not_pay  significantly slower, or significantly faster but below --min-speedup
  inconclusive  the ranks cannot tell the arms apart (never call this a speedup)
and crossover_concurrency: interpolated between the last concurrency that pays and the next
one that does not (null when there is none). Open-loop cells (`specgate probe --request-rate`) are
points per (mix, request rate) with their own crossover_request_rate, never mixed with the
concurrency points; records written by `specgate probe ab` report their pairing (ABBA, how many
pairs, the median and largest time between paired cells). Records come from `specgate probe`.

  specgate compare base.json spec.json --format json --min-speedup 1.1

Exit codes: 0 every point pays, 1 some point does not pay, 2 otherwise (some inconclusive),
3 invalid input (unreadable record, the arms in the wrong order, records that are not one consistent
experiment: another engine, build or model or one left unknown, mixes of another shape, a copied cell,
a rate that is not tokens / wall, acceptance on the wrong arm or beyond 1 + k, dates unknown, in the
future or more than a day apart; --alpha outside (0, 0.2]).
"""

from __future__ import annotations

import argparse
import sys

from gate.commands._args import exit_invalid_on_usage_error, invalid, positive_float
from gate.model.plausibility import MAX_ALPHA
from gate.status import EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS, InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    exit_invalid_on_usage_error(parser)
    parser.add_argument("baseline", metavar="BASELINE.json", help="probe record of the arm without speculation")
    parser.add_argument("speculative", metavar="SPECULATIVE.json", help="probe record of the speculative arm")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")
    parser.add_argument("--alpha", type=alpha_level, default=0.05, metavar="A",
                        help=f"significance level of each one-sided test, in (0, {MAX_ALPHA:g}] (default 0.05)")
    parser.add_argument("--min-speedup", type=positive_float, metavar="X",
                        help="a point pays only if its speedup (point estimate) is at least X")


def alpha_level(value: str) -> float:
    """A significance level in (0, MAX_ALPHA] (gate.model.plausibility): 0.9 would call most noise a speedup."""
    x = positive_float(value)
    if x > MAX_ALPHA:
        raise argparse.ArgumentTypeError(f"must be in (0, {MAX_ALPHA:g}], got {value!r}")
    return x


def run(args: argparse.Namespace) -> int:
    from gate.evidence.probes import ProbeError, load_record
    from gate.inputs.jsontext import dumps
    from gate.probe.compare import CompareError, Verdict, as_text, compare

    try:
        result = compare(load_record(args.baseline), load_record(args.speculative), alpha=args.alpha,
                         min_speedup=args.min_speedup)
    except (ProbeError, CompareError, InputError) as e:
        return invalid(f"compare: {e}")
    try:  # no NaN/Infinity in the JSON (gate.inputs.jsontext.dumps): one line, exit 3 instead
        text = dumps(result.to_json(), "compare") if args.format == "json" else as_text(result)
    except InputError as e:
        return invalid(f"compare: {e}")
    try:
        print(text, flush=True)
    except BrokenPipeError:  # `specgate compare ... | head`: the reader left; the exit code still counts
        sys.stderr.close()
    verdicts = {p.verdict for p in result.points}
    if Verdict.DOES_NOT_PAY in verdicts:
        return EXIT_FAIL
    if verdicts == {Verdict.PAYS}:
        return EXIT_PASS
    return EXIT_INCONCLUSIVE
