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
Where both arms read energy in every cell of a point (`specgate probe --energy-source`, issue 38): tokens
per joule (output tokens ÷ joules per cell) and joules per accepted token per arm, through the same rank
test and bands as speed, labelled by their source, method (energy counter or integrated power) and scope
(board or wall), with each arm's idle watts shown separately; with --min-tokens-per-joule-ratio they
count towards the exit code like the speed points.

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
from typing import TYPE_CHECKING

from gate.commands._args import exit_invalid_on_usage_error, invalid, positive_float
from gate.model.plausibility import DEFAULT_ALPHA, MAX_ALPHA
from gate.status import EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS, InputError

if TYPE_CHECKING:
    from gate.checks.acceptance.comparison import Comparison


def add_arguments(parser: argparse.ArgumentParser) -> None:
    exit_invalid_on_usage_error(parser)
    parser.add_argument("baseline", metavar="BASELINE.json", help="probe record of the arm without speculation")
    parser.add_argument("speculative", metavar="SPECULATIVE.json", help="probe record of the speculative arm")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")
    parser.add_argument("--alpha", type=alpha_level, default=DEFAULT_ALPHA, metavar="A",
                        help=f"significance level of each one-sided test, in (0, {MAX_ALPHA:g}] (default {DEFAULT_ALPHA:g})")
    parser.add_argument("--min-speedup", type=positive_float, metavar="X",
                        help="a point pays only if its speedup (point estimate) is at least X")
    parser.add_argument("--min-tokens-per-joule-ratio", type=positive_float, metavar="X",
                        help="with energy in the records: tokens per joule must be at least X times the "
                             "baseline's, and the energy verdicts count towards the exit code")


def alpha_level(value: str) -> float:
    """A significance level in (0, MAX_ALPHA] (gate.model.plausibility): 0.9 would call most noise a speedup."""
    x = positive_float(value)
    if x > MAX_ALPHA:
        raise argparse.ArgumentTypeError(f"must be in (0, {MAX_ALPHA:g}], got {value!r}")
    return x


def run(args: argparse.Namespace) -> int:
    from gate.checks.acceptance.comparison import CompareError, compare
    from gate.evidence.probes import ProbeError, load_record
    from gate.inputs.jsontext import dumps
    from gate.model.speedup.pays import Verdict

    try:
        result = compare(load_record(args.baseline), load_record(args.speculative), alpha=args.alpha,
                         min_speedup=args.min_speedup, min_tokens_per_joule_ratio=args.min_tokens_per_joule_ratio)
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
    if args.min_tokens_per_joule_ratio is not None:
        verdicts |= {e.result.verdict for e in result.energy}
    if Verdict.DOES_NOT_PAY in verdicts:
        return EXIT_FAIL
    if verdicts == {Verdict.PAYS}:
        return EXIT_PASS
    return EXIT_INCONCLUSIVE


def _fmt(v: float | None, spec: str = ".3g") -> str:
    return "-" if v is None else format(v, spec)


def as_text(c: Comparison) -> str:
    """A table a person reads: one row per point, then the crossover and the test used."""
    from gate.inputs.jsontext import printable
    from gate.model.speedup.point import TEST_NAME

    head = (f"{'mix':<16} {'conc':>4} {'base tok/s':>10} {'spec tok/s':>10} {'speedup':>8} "
            f"{'range':>13} {'p':>8} {'L':>5} {'L*':>5}  verdict")
    lines = [head]
    for p in c.points:
        rng = f"{_fmt(p.speedup_low)}-{_fmt(p.speedup_high)}" if p.speedup_low is not None else "-"
        load = str(p.concurrency) if p.request_rate is None else f"{p.request_rate:g}/s"
        lines.append(f"{p.mix:<16} {load:>4} {_fmt(p.baseline_tokens_per_second, '.1f'):>10} "
                     f"{_fmt(p.speculative_tokens_per_second, '.1f'):>10} {_fmt(p.speedup):>8} {rng:>13} "
                     f"{_fmt(p.p_value):>8} {_fmt(p.acceptance_length):>5} "
                     f"{_fmt(p.break_even_acceptance_length):>5}  {p.verdict.value}")
    for mix, at in c.crossovers.items():
        b = c.crossover_between[mix]
        lines.append(f"crossover ({mix}): " + (f"concurrency {at:.3g} (between {b[0]} and {b[1]})" if at is not None
                                               and b else "none measured"))
    for mix, at in c.rate_crossovers.items():
        rb = c.rate_crossover_between[mix]
        lines.append(f"crossover ({mix}, open loop): " + (
            f"request rate {at:.3g}/s (between {rb[0]:g} and {rb[1]:g}/s)" if at is not None and rb
            else "none measured"))
    if c.pairing is not None:
        pr = c.pairing
        apart = (f"paired cells measured {pr['median_apart_seconds']:.3g} s apart (median; at most "
                 f"{pr['max_apart_seconds']:.3g} s) over {pr['pairs']} pairs" if pr["pairs"] else "no paired cells")
        lines.append(f"pairing: {'ABBA by specgate probe ab, ' if pr['order'] else ''}{apart}")
    kind = {p.interval_kind for p in c.points if p.interval_kind}
    normal = [f"{p.mix} at {p.concurrency if p.request_rate is None else f'{p.request_rate:g}/s'}"
              for p in c.points if p.test_method == "normal"]
    test = TEST_NAME if not normal else (  # gate.stats chooses the exact test by its cost
        f"{TEST_NAME.replace('exact ', '')}: exact, except the normal approximation with tie correction "
        f"at {', '.join(normal)} (the exact count would cost too much there)")
    lines.append(f"test: {test}, alpha {c.alpha:g}"
                 + (f", min_speedup {c.min_speedup:g}" if c.min_speedup is not None else "")
                 + ("; range = observed min-max of the ratios, not a confidence interval"
                    if "observed_range" in kind else ""))
    for p in c.points:
        lines.append(f"- {p.reason}")
    for e in c.energy:
        r = e.result
        load = f"concurrency {e.concurrency}" if e.request_rate is None else f"request rate {e.request_rate:g}/s"
        idle = f"idle {_fmt(e.baseline_idle_watts)} / {_fmt(e.speculative_idle_watts)} W (baseline / speculative)"
        lines.append(f"energy {e.mix} at {load} ({e.scope}, {e.method}, {e.source}): tok/J "
                     f"{_fmt(r.baseline_tokens_per_joule)} -> {_fmt(r.speculative_tokens_per_joule)}, J/accepted "
                     f"token {_fmt(r.baseline_joules_per_token)} -> {_fmt(r.speculative_joules_per_token)}; {idle}; "
                     f"{r.verdict.value}: {r.reason}")
    # Mix names come from the records: a line break or an escape in one must not forge a row (printable).
    return "\n".join(printable(line) for line in lines)
