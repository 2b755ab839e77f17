"""SGLang's schedule writer: the bands of `specgate tune --emit` as SGLang 0.5.23's `--speculative-adaptive-config`.

A tier per band keyed by its first batch (`_find_closest_bs` routes a batch to the largest key ≤ it),
`candidate_steps` = the depths that pay at every measured concurrency of the band, up to its best k (k = 0 where
none does; gate.model.speedup.bands.candidates); run with `--speculative-adaptive`, EAGLE or EAGLE3 and top-k 1,
and a `--speculative-num-steps` among the candidates. The fragment is round-tripped through SGLang's own reading
(`exporter.engines.sglang.schedule.sglang_adaptive_schedule`) before it is printed.
"""

from __future__ import annotations

from typing import Any

from exporter.engines.sglang.schedule import sglang_adaptive_schedule
from gate.model.engines.base import WrittenSchedule
from gate.model.speedup.bands import BatchBand, candidates
from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.predict import TuneResult

# SGLang's server_args turns these launch algorithms into another before anything reads them (NEXTN runs as EAGLE).
ALIASES: dict[str, str] = {"NEXTN": "EAGLE"}


def write_schedule(bands: list[BatchBand], result: TuneResult, point: str | None) -> WrittenSchedule:
    """SGLang's adaptive config: a tier per band with its candidate steps; SGLang's reading of it."""
    bands = [BatchBand(b.start, b.end, b.k, b.concurrencies, b.speedup, b.speedup_low, b.speedup_high,
                       candidates(result, point, b)) for b in bands]
    fragment: dict[str, Any] = {str(b.start): {"candidate_steps": list(b.candidates)} for b in bands}
    steps = sorted({c for b in bands for c in b.candidates})
    if max(steps, default=0) <= 0:  # SGLang starts at --speculative-num-steps, one of the candidates: 0 is no start
        raise TuneInputError("--emit sglang: every candidate step is 0, and SGLang starts at a "
                             "--speculative-num-steps among them: no start speculates (run without speculation)")
    start = bands[0].k if bands[0].k > 0 else max(steps)
    notes = ["SGLang: pass the fragment as a file with --speculative-adaptive --speculative-adaptive-config FILE "
             f"(EAGLE or EAGLE3, --speculative-eagle-topk 1) and --speculative-num-steps {start} (one of the "
             "candidates); k = steps at top-k 1"]
    return fragment, sglang_adaptive_schedule(fragment), bands, notes
