"""`specgate tune --emit vllm|sglang|trtllm`: the best depth per concurrency band as a schedule the engine runs.

Why from the tune result and nothing else: the best k per measured concurrency and the crossover are what tune
already predicts (gate.model.speedup.predict); the schedule only writes them in the engine's spelling. The bands:

- the measured concurrencies c_1 < … < c_n each get their best k (the largest predicted point speedup), or
  k = 0 where even the best depth does not pay (predicted speedup ≤ 1); where nothing pays anywhere the
  schedule is k = 0 at every batch (said in a note; vLLM's num_speculative_tokens is then the deepest k
  measured, TensorRT-LLM cannot say it and is refused);
- band i covers batches [c_i, c_{i+1} − 1] (the first from batch 1, the last every larger batch): a measured
  concurrency's k holds until the next measured one changes it — except where speculation stops paying
  between them: k_i's predicted speedup falls through 1 at the interpolated crossover b* (gate.model.speedup.predict.
  crossover), so batches up to ⌊b*⌋ keep k_i and k = 0 starts at ⌊b*⌋ + 1;
- neighbours with the same k are one band.

Each band carries its predicted speedup (the smallest point speedup over its measured concurrencies) and band
(min low .. max high over them; k = 0 is 1.0, no speculation) — **predicted**, reported beside the engine fragment, never inside it.

The fragments, each round-tripped through `exporter.schedule` (the engine's own reading) before it is printed:

- vLLM 0.32: `{"num_speculative_tokens": <largest k>, "num_speculative_tokens_per_batch_size": [[1, e_1, k_1],
  …, [s_n, VLLM_LAST_END, k_n]]}` merged over the speculative arm's other `--speculative-config` keys (method,
  model, prompt lookup…) from its probe record; vLLM carries the last k to every larger batch anyway.
- SGLang 0.5.23 `--speculative-adaptive-config`: a tier per band keyed by its first batch (`_find_closest_bs`
  routes a batch to the largest key ≤ it), `candidate_steps` = the depths that pay at every measured
  concurrency of the band, up to its best k (k = 0 where none does); with `--speculative-adaptive`, EAGLE or
  EAGLE3 and top-k 1, and a `--speculative-num-steps` among the candidates.
- TensorRT-LLM `draft_len_schedule` (keys end their bands, every batch above the largest key runs 0):
  `{"max_draft_len": <largest k>, "draft_len_schedule": {"e_1": k_1, …}}`, the last band with k > 0 ending at
  TRTLLM_LAST_KEY; TensorRT-LLM requires the smallest key's length to be max_draft_len (the deepest k at batch 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from exporter.schedule import DepthSchedule, sglang_adaptive_schedule, trtllm_schedule, vllm_schedule
from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.predict import Prediction, TuneResult, crossover

# The last vLLM range must end somewhere; past any batch an engine runs (vLLM's max_num_seqs defaults to 256 or
# 1024), and vLLM's dense lookup carries the last k to every batch up to max_num_seqs whatever the end.
VLLM_LAST_END = 65536
# TensorRT-LLM runs 0 above the largest key, so a last band that speculates needs a key past any batch.
TRTLLM_LAST_KEY = 65536
# Keys of a vLLM --speculative-config the schedule sets (never merged from the probe record).
_VLLM_DEPTH_KEYS = frozenset({"num_speculative_tokens", "num_speculative_tokens_per_batch_size"})


@dataclass(frozen=True)
class BatchBand:
    """Batches [start, end] (end None: every larger batch) run depth k; its predicted speedup band."""

    start: int
    end: int | None
    k: int
    concurrencies: tuple[int, ...]
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    candidates: tuple[int, ...] = ()  # SGLang: the tier's candidate steps

    def to_json(self) -> dict[str, Any]:
        return {"batch_start": self.start, "batch_end": self.end, "k": self.k,
                "measured_concurrencies": list(self.concurrencies), "predicted_speedup": self.speedup,
                "predicted_speedup_low": self.speedup_low, "predicted_speedup_high": self.speedup_high,
                **({"candidate_steps": list(self.candidates)} if self.candidates else {})}


@dataclass(frozen=True)
class Emitted:
    """The engine fragment (what the engine reads) and, beside it, the bands with their predicted speedups."""

    engine: str
    point: str | None
    fragment: dict[str, Any]
    bands: tuple[BatchBand, ...]
    schedule: DepthSchedule
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "point": self.point, "fragment": self.fragment, "label": "predicted",
                "bands": [b.to_json() for b in self.bands], "notes": list(self.notes)}

    def text(self) -> str:
        """The bands, one line each, labelled predicted (for stderr or the text report)."""
        out = [f"schedule for {self.engine}" + (f" ({self.point})" if self.point else "")
               + ": predicted speedup per band of batch sizes (predicted, not measured):"]
        for b in self.bands:
            where = f"batch {b.start}" + ("+" if b.end is None else (f"-{b.end}" if b.end != b.start else ""))
            band = ("" if b.speedup_low is None or b.speedup_high is None
                    else f" (band {b.speedup_low:.3f}..{b.speedup_high:.3f})")
            speed = "-" if b.speedup is None else f"{b.speedup:.3f}x"
            steps = f", candidate steps {list(b.candidates)}" if b.candidates else ""
            measured = ", ".join(map(str, b.concurrencies)) or "none"
            out.append(f"  {where:<14} k = {b.k}{steps}: predicted speedup {speed}{band} at its slowest measured "
                       f"concurrency; measured at concurrency {measured}")
        out += [f"  - {n}" for n in self.notes]
        return "\n".join(out) + "\n"


def _cells(result: TuneResult, point: str | None, conc: int) -> list[Prediction]:
    return [p for p in result.points if p.point == point and p.concurrency == conc and p.speedup is not None]


def _choose_point(result: TuneResult, point: str | None) -> str | None:
    points = sorted({b.point for b in result.best if b.concurrency is not None}, key=lambda p: p or "")
    if not points:
        raise TuneInputError("--emit needs predicted speedups at measured concurrencies: probe records (specgate "
                             "probe) of a baseline and a speculative arm at several fixed k and concurrencies")
    if point is not None:
        if point not in points:
            raise TuneInputError(f"--emit: no predictions at operating point {point!r} (have: "
                                 + ", ".join(p or "(unnamed)" for p in points) + ")")
        return point
    if len(points) > 1:
        raise TuneInputError("--emit: several operating points (" + ", ".join(p or "(unnamed)" for p in points)
                             + "); one schedule serves one traffic: name it with --point")
    return points[0]


def batch_bands(result: TuneResult, point: str | None = None) -> tuple[str | None, list[BatchBand]]:
    """The bands of batch sizes and their depths (module docstring), from tune's predictions at `point`."""
    chosen = _choose_point(result, point)
    best = sorted((b for b in result.best if b.point == chosen and b.concurrency is not None),
                  key=lambda b: b.concurrency or 0)
    rows: list[tuple[int, int, Prediction]] = []  # (concurrency, k, the cell at that k)
    for b in best:
        cell = result.at(chosen, b.concurrency, b.k)
        assert cell is not None and cell.speedup is not None and b.concurrency is not None
        rows.append((b.concurrency, b.k if cell.speedup > 1.0 else 0, cell))
    starts: list[tuple[int, int]] = []  # (first batch, k)
    for i, (conc, k, _) in enumerate(rows):
        if i == 0:
            starts.append((1, k))
            continue
        prev_conc, prev_k, prev_cell = rows[i - 1]
        if k == prev_k:
            continue
        start = conc
        if k == 0 and prev_k > 0:
            same = result.at(chosen, conc, prev_k)
            s_next = same.speedup if same is not None and same.speedup is not None else rows[i][2].speedup
            assert prev_cell.speedup is not None and s_next is not None
            b_star = crossover([(prev_conc, prev_cell.speedup), (conc, s_next)])
            if b_star is not None:
                start = min(conc, max(prev_conc + 1, math.floor(b_star) + 1))
        starts.append((start, k))
    bands: list[BatchBand] = []
    for i, (start, k) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else None
        inside = [r for r in rows if r[0] >= start and (end is None or r[0] <= end)]
        concs = tuple(r[0] for r in inside)
        if k == 0:
            bands.append(BatchBand(start, end, 0, concs, 1.0, 1.0, 1.0))
            continue
        cells = [c for conc in concs if (c := result.at(chosen, conc, k)) is not None and c.speedup is not None]
        lows = [c.speedup_low for c in cells if c.speedup_low is not None]
        highs = [c.speedup_high for c in cells if c.speedup_high is not None]
        speeds = [c.speedup for c in cells if c.speedup is not None]
        bands.append(BatchBand(start, end, k, concs, min(speeds) if speeds else None, min(lows) if lows else None,
                               max(highs) if highs else None))
    return chosen, bands


def _candidates(result: TuneResult, point: str | None, band: BatchBand) -> tuple[int, ...]:
    """SGLang: the depths up to the band's k that pay at every measured concurrency of the band (k = 0: [0])."""
    if band.k == 0:
        return (0,)
    paying: set[int] | None = None
    for conc in band.concurrencies:
        here = {c.k for c in _cells(result, point, conc) if c.k <= band.k and (c.speedup or 0.0) > 1.0}
        paying = here if paying is None else paying & here
    return tuple(sorted((paying or set()) | {band.k}))


def _vllm(bands: list[BatchBand], largest: int, result: TuneResult, point: str | None,
          base_config: Mapping[str, Any] | None) -> tuple[dict[str, Any], DepthSchedule, list[BatchBand], list[str]]:
    """vLLM's --speculative-config fragment over the probe record's other keys; vLLM's reading of it."""
    fragment: dict[str, Any] = {k: v for k, v in (base_config or {}).items() if k not in _VLLM_DEPTH_KEYS}
    ranges = [[b.start, b.end if b.end is not None else max(b.start, VLLM_LAST_END), b.k] for b in bands]
    fragment.update({"num_speculative_tokens": largest, "num_speculative_tokens_per_batch_size": ranges})
    notes = [] if base_config else ["no speculative arm's --speculative-config in the probe records: add the "
                                    "method's keys (method, model, …) to the fragment"]
    return fragment, vllm_schedule(ranges, largest), bands, notes


def _sglang(bands: list[BatchBand], largest: int, result: TuneResult, point: str | None,
            base_config: Mapping[str, Any] | None) -> tuple[dict[str, Any], DepthSchedule, list[BatchBand], list[str]]:
    """SGLang's adaptive config: a tier per band with its candidate steps; SGLang's reading of it."""
    bands = [BatchBand(b.start, b.end, b.k, b.concurrencies, b.speedup, b.speedup_low, b.speedup_high,
                       _candidates(result, point, b)) for b in bands]
    fragment: dict[str, Any] = {str(b.start): {"candidate_steps": list(b.candidates)} for b in bands}
    notes = ["SGLang: pass the fragment as a file with --speculative-adaptive --speculative-adaptive-config FILE "
             f"(EAGLE or EAGLE3, --speculative-eagle-topk 1) and --speculative-num-steps {bands[0].k} (one of the "
             "candidates); k = steps at top-k 1"]
    return fragment, sglang_adaptive_schedule(fragment), bands, notes


def _trtllm(bands: list[BatchBand], largest: int, result: TuneResult, point: str | None,
            base_config: Mapping[str, Any] | None) -> tuple[dict[str, Any], DepthSchedule, list[BatchBand], list[str]]:
    """TensorRT-LLM's max_draft_len and draft_len_schedule (keys end their bands); its reading of it."""
    if bands[0].k != largest:
        raise TuneInputError(f"--emit trtllm: the best k at batch 1 is {bands[0].k}, below the largest {largest}; "
                             "TensorRT-LLM requires the smallest draft_len_schedule key to run max_draft_len "
                             "(a max_draft_len > 0)")
    keyed: dict[int, int] = {}
    for b in bands:
        if b.end is None and b.k == 0:
            continue  # TensorRT-LLM runs 0 above the largest key
        keyed[b.end if b.end is not None else max(b.start, TRTLLM_LAST_KEY)] = b.k
    fragment = {"max_draft_len": largest, "draft_len_schedule": {str(key): v for key, v in keyed.items()}}
    return fragment, trtllm_schedule(keyed, largest), bands, []


# One writer per engine (the engine's spelling of a schedule); `specgate tune --emit` offers these keys.
WRITERS: Mapping[str, Callable[[list[BatchBand], int, TuneResult, str | None, Mapping[str, Any] | None],
                               tuple[dict[str, Any], DepthSchedule, list[BatchBand], list[str]]]] = MappingProxyType(
    {"vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm})


def emit(result: TuneResult, engine: str, *, point: str | None = None,
         base_config: Mapping[str, Any] | None = None) -> Emitted:
    """The schedule for `engine` (one of WRITERS; TuneInputError, one line, where the predictions cannot give one)."""
    chosen, bands = batch_bands(result, point)
    largest = max(b.k for b in bands)
    off: list[str] = []
    if largest == 0:
        # Nothing pays anywhere: the schedule the measurements give is k = 0 at every batch. vLLM needs a
        # num_speculative_tokens > 0 beside it: the deepest k measured.
        largest = max((p.k for p in result.points if p.point == chosen and p.speedup is not None), default=1)
        off.append("speculation is predicted to pay at no measured concurrency (best predicted speedup <= 1 "
                   "everywhere): this schedule sets k = 0 at every batch; running without speculation is simpler")
    fragment, schedule, bands, notes = WRITERS[engine](bands, largest, result, chosen, base_config)
    top = max((c for b in bands for c in b.concurrencies), default=None)
    if top is not None and bands[-1].k > 0:
        off.append(f"batches above concurrency {top} (the largest measured) run k = {bands[-1].k} too: not measured "
                   "there (probe higher concurrencies to know)")
    notes = off + notes
    for b in bands:  # the engine reads back what the bands say (exporter.schedule is its reading)
        for batch in {b.start, b.end or b.start}:
            assert schedule.k_at(batch) == b.k, (engine, b, schedule)
    return Emitted(engine, chosen, fragment, tuple(bands), schedule, tuple(notes))


def base_speculative_config(configs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The speculative arm's other `--speculative-config` keys: those all its probe records agree on."""
    if not configs:
        return None
    common = {k: v for k, v in configs[0].items() if k not in _VLLM_DEPTH_KEYS}
    for cfg in configs[1:]:
        common = {k: v for k, v in common.items() if cfg.get(k) == v}
    return common
