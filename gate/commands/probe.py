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
more than many speedups): keep both up and run `specgate probe ab`; by hand, alternate `--repetitions 1 --append`
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

Sub-commands, each with its own `--help`:
  specgate probe ab       both arms in one command, interleaved ABBA, both records written
  specgate probe import   results of `vllm bench serve`, AIPerf or guidellm as probe records

Exit codes: 0 record written, 3 invalid input or an engine that could not be probed (one line
on stderr; no record is written).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gate.commands import _probe
from gate.status import InputError

if TYPE_CHECKING:  # imported where used: `specgate --help` loads no probe machinery
    from gate.evidence.probes import ProbeRecord
    from gate.probe.progress import Reporter
    from gate.probe.workload import MixRequest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine-url", metavar="URL", help="engine base URL (or its /metrics)")
    parser.add_argument("--arm", choices=("baseline", "speculative"),
                        help="what this engine runs; checked against its counters (a mismatch is exit 3)")
    parser.add_argument("--out", metavar="FILE", help="where the probe record (JSON) goes")
    parser.add_argument("--append", action="store_true",
                        help="add the cells to --out's existing record (same arm, engine, model, mixes), "
                             "repetitions numbered on: alternate two engines turn by turn")
    _probe.add_shared_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return _probe.run(args, _one_arm)


def _one_arm(args: argparse.Namespace, request: MixRequest, say: Reporter) -> list[tuple[Path, ProbeRecord]]:
    from gate.evidence.probes import load_record
    from gate.probe.runner import probe

    missing = [f for f, v in (("--engine-url", args.engine_url), ("--arm", args.arm), ("--out", args.out)) if not v]
    if missing:
        raise InputError(f"probe needs {', '.join(missing)} (or `probe ab` for both arms)")
    out = Path(args.out)
    previous = load_record(out) if args.append and out.exists() else None
    return [(out, probe(_probe.config(args, args.engine_url, args.arm), request, previous, say, say))]
