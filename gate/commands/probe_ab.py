"""Probe both arms in one command: the baseline and the speculative engine, interleaved, both records written.

Two engines measured one after the other see different machine load (a shared machine drifts by more than
many speedups). Keep both up; `probe ab` interleaves the arms ABBA per repetition (baseline then speculative
in odd repetitions, the reverse in even ones, so a drift of a shared machine weighs on both alike), warms up
once per arm and writes both records; each cell records how far apart it and its partner were measured
(`pair_apart_seconds`) and `specgate compare` reports the pairing:

  specgate probe ab --baseline-url http://127.0.0.1:8000 --speculative-url http://127.0.0.1:8001 \\
      --speculative-config '{"method":"ngram","num_speculative_tokens":3}' \\
      --prompt-tokens 64 --output-tokens 64 --concurrency 1,4 --out-baseline base.json --out-speculative spec.json
  specgate compare base.json spec.json

Every other flag means what it means to `specgate probe` (one arm; see `specgate probe --help` for the mix,
open loop, the client ceiling and the bounds), applied to both arms alike; `--speculative-config` is the
speculative engine's. The arms share one `--time-limit`; a run that reaches it writes neither record.

Exit codes: 0 both records written, 3 invalid input or an engine that could not be probed (one line on
stderr; no record is written).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gate.commands import _probe

if TYPE_CHECKING:  # imported where used: `specgate --help` loads no probe machinery
    from gate.evidence.probes import ProbeRecord
    from gate.probe.progress import Reporter
    from gate.probe.workload import MixRequest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    arms = parser.add_argument_group("the two arms (all four required)")
    arms.add_argument("--baseline-url", required=True, metavar="URL", help="the engine without speculation")
    arms.add_argument("--speculative-url", required=True, metavar="URL", help="the engine with speculation")
    arms.add_argument("--out-baseline", required=True, metavar="FILE", help="where the baseline record goes")
    arms.add_argument("--out-speculative", required=True, metavar="FILE", help="where the speculative record goes")
    _probe.add_shared_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return _probe.run(args, _both_arms)


def _both_arms(args: argparse.Namespace, request: MixRequest, say: Reporter) -> list[tuple[Path, ProbeRecord]]:
    from gate.probe.runner import probe_ab

    outs = (Path(args.out_baseline), Path(args.out_speculative))
    cfgs = (_probe.config(args, args.baseline_url, "baseline"),
            _probe.config(args, args.speculative_url, "speculative"))
    records = probe_ab(cfgs, request, (outs[0].name, outs[1].name), say, say)
    return list(zip(outs, records, strict=True))
