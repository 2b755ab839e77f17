"""What `specgate probe` (one arm) and `specgate probe ab` (both arms) share: the flags of the request mix,
the bounds, energy and the engine; the probe's settings from them; writing the records.

Why a module of its own: the two are separate sub-commands, each with its own `--help` (a newcomer typing
`probe ab --help` reads about both arms, not about one), and no command imports another command.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from exporter.engines import ENGINE_KINDS
from gate.commands._args import exit_invalid_on_usage_error, invalid, positive_float, positive_int
from gate.status import EXIT_PASS, InputError

if TYPE_CHECKING:  # imported where used: `specgate --help` loads no probe machinery
    from gate.evidence.probes import ProbeRecord
    from gate.probe.progress import Reporter
    from gate.probe.runner import ProbeConfig
    from gate.probe.workload import MixRequest

MAX_REQUEST_RATE = 10_000.0


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


def length_list(value: str) -> tuple[int, ...]:
    """`--prompt-tokens N[,N...]`: one length, or several (a context sweep, issue 39), each its own mix."""
    out = []
    for part in value.split(","):
        try:
            n = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected prompt lengths like 2048,32768, got {value!r}") from None
        if n < 1:
            raise argparse.ArgumentTypeError(f"expected positive prompt lengths like 2048,32768, got {value!r}")
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


def add_shared_arguments(parser: argparse.ArgumentParser) -> None:
    """Every flag but the arm's own (its URL, arm and output file): the same meaning in both sub-commands."""
    exit_invalid_on_usage_error(parser)
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
    src.add_argument("--prompt-tokens", type=length_list, metavar="N[,N...]",
                     help="prompt length in tokens; several (e.g. 2048,32768,131072) sweep the context: one mix "
                          "per length, the engine's counters read around each length's cells alone")
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


def config(args: argparse.Namespace, url: str, arm: str) -> ProbeConfig:
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


# what a sub-command measures: (args, the mix, the progress reporter) -> (file, record) pairs to write
Measure = Callable[[argparse.Namespace, "MixRequest", "Reporter"], list[tuple[Path, "ProbeRecord"]]]


def run(args: argparse.Namespace, measure: Measure) -> int:
    """Both sub-commands' run: the mix from the flags, `measure`, then every record written, or one line and
    exit 3 (no record)."""
    from gate.evidence.probes import ProbeError
    from gate.probe.progress import reporter
    from gate.probe.workload import MixRequest

    # the bar is closed (its last frame and a newline) before any error's one line or `wrote FILE`
    with reporter("[probe]", unit="requests", steps="cells", plain=args.no_progress) as say:
        try:
            if args.warmup < 0:
                raise InputError("--warmup must be 0 or more")
            if args.seed < 0:
                raise InputError("--seed must be 0 or more")
            request = MixRequest(prompt_tokens=args.prompt_tokens, output_tokens=args.output_tokens,
                                 plan=args.plan, prompts=args.prompts, names=tuple(args.mix),
                                 concurrencies=args.concurrency, temperature=args.temperature,
                                 request_rates=args.request_rate)
            done: list[tuple[Path, ProbeRecord]] | str = measure(args, request, say)
        except (ProbeError, InputError) as e:
            done = f"probe: {e}"
    if isinstance(done, str):
        return invalid(done)
    for out, record in done:
        bad = _write(out, record)
        if bad is not None:
            return bad
        say(f"wrote {out}: {len(record.cells)} cells")
    return EXIT_PASS


def _write(out: Path, record: ProbeRecord) -> int | None:
    from gate.probe.record import dump

    try:
        out.write_text(dump(record))  # no NaN/Infinity in a record (gate.inputs.jsontext): InputError, exit 3
    except InputError as e:
        return invalid(f"probe: {e}")
    except OSError as e:
        return invalid(f"probe: cannot write {out}: {e.strerror or e}")
    return None
