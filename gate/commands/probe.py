"""Probe a live engine: is this arm fast? Writes a probe record for `specgate compare`.

Drives an OpenAI-compatible engine (vLLM, SGLang) with streaming `/v1/completions`:
greedy, fixed-length requests (temperature 0, ignore_eos), `C` in flight at a time for each
concurrency C, each cell repeated (default 5, so that the rank test of `specgate compare` can
reach significance: 3 against 3 never can at alpha 0.05), after warm-up requests that are not
counted. TTFT and TPOT are timed by the client; the served rate of a cell is its output tokens
over its wall clock (first send to last token, first-token waiting included). `/metrics` is
read before and after every cell, so the acceptance length of a cell is that cell's alone.
Start the engine once without speculation (`--arm baseline`) and once with it
(`--arm speculative`), probe both with the same mix, then compare:

  specgate probe --engine-url http://127.0.0.1:8000 --arm baseline \\
      --prompt-tokens 64 --output-tokens 64 --concurrency 1,4 --out base.json
  specgate probe --engine-url http://127.0.0.1:8001 --arm speculative \\
      --speculative-config '{"method":"ngram","num_speculative_tokens":3}' \\
      --prompt-tokens 64 --output-tokens 64 --concurrency 1,4 --out spec.json
  specgate compare base.json spec.json

Both arms in one command (`probe ab`): both engines kept up, the arms interleaved ABBA per repetition
(baseline then speculative in odd repetitions, the reverse in even ones, so a drift of a shared machine
weighs on both alike), warm-up once per arm, both records written; each cell records how far apart it and
its partner were measured (`pair_apart_seconds`) and `compare` reports the pairing:

  specgate probe ab --baseline-url http://127.0.0.1:8000 --speculative-url http://127.0.0.1:8001 \\
      --speculative-config '{"method":"ngram","num_speculative_tokens":3}' \\
      --prompt-tokens 64 --output-tokens 64 --concurrency 1,4 --out-baseline base.json --out-speculative spec.json

Open loop: `--request-rate R[,R...]` sends each cell's requests at Poisson arrival times (R per second,
seeded by `--seed`, the same times in both arms; the seed and the times are recorded) besides or instead of
`--concurrency`; `compare` reports those points per rate and `crossover_request_rate`. Before the first cell
the probe measures its own client's ceiling against a null engine on loopback (one warm-up request, then the median of 3 trials per concurrency: under a second); a cell whose
rate is within 2x of it is marked client-bound and is no evidence (`--no-client-ceiling` skips it; then no
cell is assessed).

The mix: `--prompt-tokens N --output-tokens M` (prompts of exactly N tokens of the engine's own
tokenizer where it has `/tokenize`), or `--plan PLAN` (its workload mixes; `--mix NAME` picks
some; without --concurrency each mix runs at its own concurrency), or `--prompts FILE.jsonl`
(your own traffic: one {"prompt": ..., "mix"?: ..., "max_tokens"?: ...} per line).
Two engines measured one after the other see different machine load (a shared machine drifts by
more than many speedups): keep both up and run `specgate probe ab --baseline-url U1 --speculative-url U2
--out-baseline F1 --out-speculative F2 ...`, which interleaves the arms ABBA per repetition (warm-up once
per arm) and records how far apart each pair was measured; by hand, alternate `--repetitions 1 --append`
per turn, so the drift spreads over both arms (`--append` adds the cells to FILE's record of the same arm, engine,
model and mix, numbering repetitions on). The probe must be the engine's only client while it
runs. It is bounded, and the bounds are checked before anything is sent: a campaign needing more
than --max-requests requests, or cells of fewer --requests than their concurrency, is refused
before the first request or /tokenize call; --time-limit is one deadline for the whole run (model
lookup, tokenizing, every /metrics read and the requests in flight end there); --request-timeout
bounds each request as one exchange (a dripping stream ends there). Every answer is size-limited.
It believes nothing the engine reports without a check: with ignore_eos each request's
usage.completion_tokens must equal --output-tokens and the token ids it streamed (a request that
breaks this failed, it is never output), and each cell's tokens must be held by the engine's own
generation counter over the cell (else exit 3, no record). Progress goes to stderr, never to stdout: on a
terminal a bar (cells done of all, requests done of all, elapsed, ETA) under the lines, elsewhere (a pipe, a
log, CI) the plain lines only; `--no-progress` or SPECGATE_PROGRESS=0 forces the plain lines.

Results of `vllm bench serve --save-result --save-detailed` or AIPerf become probe records with
`specgate probe import --from vllm-bench|aiperf FILE...` (see `specgate probe import --help`).

Exit codes: 0 record written, 3 invalid input or an engine that could not be probed (one line
on stderr; no record is written).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from exporter.engines import ENGINE_KINDS
from gate.commands._args import exit_invalid_on_usage_error, invalid, positive_float, positive_int
from gate.status import EXIT_PASS, InputError

if TYPE_CHECKING:  # imported where used: `specgate --help` loads no probe machinery
    from gate.evidence.probes import ProbeRecord
    from gate.probe.progress import Reporter
    from gate.probe.runner import ProbeConfig


def concurrency_list(value: str) -> tuple[int, ...]:
    out = []
    for part in value.split(","):
        try:
            n = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected positive integers like 1,4,8, got {value!r}") from None
        if n < 1:
            raise argparse.ArgumentTypeError(f"expected positive integers like 1,4,8, got {value!r}")
        out.append(n)
    return tuple(dict.fromkeys(out))


def rate_list(value: str) -> tuple[float, ...]:
    out = []
    for part in value.split(","):
        try:
            r = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected request rates like 0.5,2,8 (per second), got {value!r}") \
                from None
        if not 0 < r <= MAX_REQUEST_RATE:
            raise argparse.ArgumentTypeError(f"request rates must be in (0, {MAX_REQUEST_RATE:g}] per second, "
                                             f"got {value!r}")
        out.append(r)
    return tuple(dict.fromkeys(out))


MAX_REQUEST_RATE = 10_000.0


def energy_source(value: str) -> str:
    """`dcgm:URL` or `nvml` (gate.probe.energy.parse_source)."""
    from gate.probe.energy import parse_source

    try:
        parse_source(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return value


def gpu_list(value: str) -> tuple[str, ...]:
    """Comma-separated GPU names as the energy source labels them."""
    gpus = tuple(g.strip() for g in value.split(",") if g.strip())
    if not gpus:
        raise argparse.ArgumentTypeError(f"expected G[,G...], got {value!r}")
    return gpus


def add_arguments(parser: argparse.ArgumentParser) -> None:
    exit_invalid_on_usage_error(parser)
    parser.add_argument("mode", nargs="?", choices=("ab",), metavar="ab",
                        help="`probe ab`: both arms in one command, interleaved ABBA (--baseline-url, "
                             "--speculative-url, --out-baseline, --out-speculative)")
    parser.add_argument("--engine-url", metavar="URL", help="engine base URL (or its /metrics); one-arm probe")
    parser.add_argument("--arm", choices=("baseline", "speculative"),
                        help="what this engine runs; checked against its counters (a mismatch is exit 3)")
    parser.add_argument("--out", metavar="FILE", help="where the probe record (JSON) goes; one-arm probe")
    ab = parser.add_argument_group("probe ab (both arms)")
    ab.add_argument("--baseline-url", metavar="URL", help="the engine without speculation")
    ab.add_argument("--speculative-url", metavar="URL", help="the engine with speculation")
    ab.add_argument("--out-baseline", metavar="FILE", help="where the baseline record goes")
    ab.add_argument("--out-speculative", metavar="FILE", help="where the speculative record goes")
    parser.add_argument("--concurrency", type=concurrency_list, default=(), metavar="C[,C...]",
                        help="requests in flight per cell, e.g. 1,4,8 (default: each plan mix's own)")
    parser.add_argument("--request-rate", type=rate_list, default=(), metavar="R[,R...]",
                        help="open loop: requests per second, sent at seeded Poisson arrival times (a cell of "
                             "--requests requests, default 16), besides or instead of --concurrency")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="seed of the open-loop arrival times (repetition r uses N + r - 1; default 0)")
    parser.add_argument("--no-client-ceiling", action="store_true",
                        help="skip measuring the client's own ceiling at start (cells are then not assessed "
                             "for being client-bound)")
    en = parser.add_argument_group("energy (issue 38)")
    en.add_argument("--energy-source", type=energy_source, metavar="dcgm:URL|nvml",
                    help="read the GPUs' energy around every cell: a dcgm-exporter /metrics URL (its energy "
                         "counter in either naming generation, else power integrated) or NVML (needs "
                         "nvidia-ml-py); an idle baseline is measured first and shown separately")
    en.add_argument("--energy-gpus", type=gpu_list, default=(), metavar="G[,G...]",
                    help="the GPUs the engine uses (DCGM gpu label or NVML index; default every GPU read)")
    en.add_argument("--idle-seconds", type=positive_float, default=5.0, metavar="S",
                    help="length of the idle baseline before the run (default 5)")
    src = parser.add_argument_group("request mix (one of)")
    src.add_argument("--prompt-tokens", type=positive_int, metavar="N", help="prompt length in tokens")
    src.add_argument("--plan", type=Path, metavar="PLAN", help="a rollout plan: probe its workload mixes")
    src.add_argument("--prompts", type=Path, metavar="FILE", help="JSONL of your own prompts")
    parser.add_argument("--output-tokens", type=positive_int, metavar="M",
                        help="output tokens per request (needed with --prompt-tokens)")
    parser.add_argument("--mix", action="append", default=[], metavar="NAME",
                        help="with --plan: only these mixes (repeatable)")
    parser.add_argument("--temperature", type=float, default=0.0, metavar="T",
                        help="sampling temperature (default 0: greedy, both arms serve the same tokens; "
                             "sampled traffic accepts fewer drafts)")
    parser.add_argument("--repetitions", type=positive_int, default=5, metavar="R", help="cells per point (default 5)")
    parser.add_argument("--warmup", type=int, default=3, metavar="N",
                        help="warm-up requests per mix, not counted (default 3)")
    parser.add_argument("--requests", type=positive_int, metavar="N",
                        help="requests per cell, at least the concurrency (default 2 x concurrency, at least 4)")
    parser.add_argument("--speculative-config", metavar="JSON",
                        help="the engine's speculative config, recorded as is (speculative arm)")
    parser.add_argument("--model", metavar="NAME", help="model name for requests (default: first of /v1/models)")
    parser.add_argument("--engine", choices=("auto", *ENGINE_KINDS), default="auto",
                        help="engine kind of /metrics (default: detect)")
    parser.add_argument("--request-timeout", type=positive_float, default=300.0, metavar="S",
                        help="bound on one request, its whole stream (default 300)")
    parser.add_argument("--time-limit", type=positive_float, default=3600.0, metavar="S",
                        help="bound on the whole run, requests in flight included; exceeding it writes no record "
                             "(default 3600)")
    parser.add_argument("--max-requests", type=positive_int, default=5000, metavar="N",
                        help="refuse campaigns needing more requests (default 5000)")
    parser.add_argument("--no-progress", action="store_true",
                        help="plain progress lines on stderr even on a terminal (also SPECGATE_PROGRESS=0); "
                             "without a terminal they are plain anyway")
    parser.add_argument("--append", action="store_true",
                        help="add the cells to --out's existing record (same arm, engine, model, mixes), "
                             "repetitions numbered on: alternate two engines turn by turn")


def _config(args: argparse.Namespace, url: str, arm: str) -> ProbeConfig:
    from gate.probe.runner import ProbeConfig, speculative_settings

    return ProbeConfig(engine_url=url, arm=arm, concurrencies=args.concurrency,
                       repetitions=args.repetitions, warmup_requests=args.warmup,
                       requests_per_cell=args.requests, request_timeout=args.request_timeout,
                       time_limit=args.time_limit, max_requests=args.max_requests, model=args.model,
                       speculative=speculative_settings(arm, args.speculative_config if arm == "speculative"
                                                        else None), engine=args.engine,
                       api_key=os.environ.get("SPECGATE_ENGINE_API_KEY") or None, source="specgate probe",
                       request_rates=args.request_rate, seed=args.seed, ceiling=not args.no_client_ceiling,
                       energy_source=args.energy_source, energy_gpus=args.energy_gpus,
                       idle_seconds=args.idle_seconds)


def _write(out: Path, record: ProbeRecord) -> int | None:
    from gate.probe.record import dump

    try:
        out.write_text(dump(record))  # no NaN/Infinity in a record (gate.inputs.jsontext): InputError, exit 3
    except InputError as e:
        return invalid(f"probe: {e}")
    except OSError as e:
        return invalid(f"probe: cannot write {out}: {e.strerror or e}")
    return None


def run(args: argparse.Namespace) -> int:
    from gate.probe.progress import reporter

    # the bar is closed (its last frame and a newline) before any error's one line or `wrote FILE`
    with reporter("[probe]", unit="requests", steps="cells", plain=args.no_progress) as say:
        done = _probe(args, say)
    if isinstance(done, str):
        return invalid(done)
    for out, record in done:
        bad = _write(out, record)
        if bad is not None:
            return bad
        say(f"wrote {out}: {len(record.cells)} cells")
    return EXIT_PASS


def _probe(args: argparse.Namespace, say: Reporter) -> list[tuple[Path, ProbeRecord]] | str:
    """The records to write with their files, or the one-line reason there are none."""
    from gate.evidence.probes import ProbeError, load_record
    from gate.probe.runner import probe, probe_ab
    from gate.probe.workload import MixRequest

    try:
        if args.warmup < 0:
            raise InputError("--warmup must be 0 or more")
        if args.seed < 0:
            raise InputError("--seed must be 0 or more")
        request = MixRequest(prompt_tokens=args.prompt_tokens, output_tokens=args.output_tokens, plan=args.plan,
                             prompts=args.prompts, names=tuple(args.mix), concurrencies=args.concurrency,
                             temperature=args.temperature, request_rates=args.request_rate)
        if args.mode == "ab":
            missing = [f for f, v in (("--baseline-url", args.baseline_url), ("--speculative-url", args.speculative_url),
                                      ("--out-baseline", args.out_baseline),
                                      ("--out-speculative", args.out_speculative)) if not v]
            if missing or args.engine_url or args.arm or args.out or args.append:
                raise InputError("probe ab needs --baseline-url, --speculative-url, --out-baseline and "
                                 "--out-speculative (not --engine-url, --arm, --out or --append)"
                                 + (f"; missing {', '.join(missing)}" if missing else ""))
            outs: tuple[Path, ...] = (Path(args.out_baseline), Path(args.out_speculative))
            cfgs = (_config(args, args.baseline_url, "baseline"), _config(args, args.speculative_url, "speculative"))
            records: tuple[ProbeRecord, ...] = probe_ab(cfgs, request, (outs[0].name, outs[1].name), say, say)
        else:
            missing = [f for f, v in (("--engine-url", args.engine_url), ("--arm", args.arm), ("--out", args.out))
                       if not v]
            if missing:
                raise InputError(f"probe needs {', '.join(missing)} (or `probe ab` for both arms)")
            outs = (Path(args.out),)
            cfg = _config(args, args.engine_url, args.arm)
            previous = load_record(outs[0]) if args.append and outs[0].exists() else None
            records = (probe(cfg, request, previous, say, say),)
    except (ProbeError, InputError) as e:
        return f"probe: {e}"
    return list(zip(outs, records, strict=True))
