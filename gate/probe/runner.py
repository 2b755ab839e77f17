"""Run a probe campaign: warm-up, then cells of (mix, concurrency) repeated, each one timed and
attributed its own acceptance.

Why each cell reads `/metrics` before and after (seed 004's method): the engine's counters are
cumulative, so the difference over one cell is that cell's drafts and accepted tokens alone —
not the warm-up's, not the previous cell's. The probe assumes it is the engine's only client
while it runs; when the engine generated more tokens in a cell than the probe's own requests
received, other traffic shared it, and that cell's acceptance is null (not attributable), with
a notice on stderr. A cell inside which the engine restarted is marked `metrics_reset` and has
no acceptance either.

Concurrency C means exactly C requests in flight: C worker threads take the cell's requests
one after another, so a cell has at least C requests (`--requests` ≥ every concurrency). A cell's
wall clock runs from the first send to the last `[DONE]`. Repetitions are the outer loop (rep 1 of
every concurrency, then rep 2, ...), so a slow drift of a shared machine spreads over all cells
instead of biasing the last ones.

What the engine says is checked, not believed (issue 21): each request's reported tokens against
what it asked for and what it streamed (gate.probe.client), and each cell's token total against
the engine's own generation counter over the cell — fewer generated tokens than the requests
report is a lying engine, and the campaign ends without a record (exit 3). An engine whose page
has no generation counter for the model gets a notice: its cells are then checked against the
streams alone.

Bounds are hard and checked before any work: the campaign's request count against
`--max-requests`, `--requests` against the concurrencies and the open-loop arrivals' expected time
against `--time-limit` before the first request or `/tokenize` call (`check_bounds`); `--time-limit` is one deadline for the whole run — model
lookup, tokenizing, every `/metrics` read and every request in flight end there.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from exporter.derive import derive_window
from exporter.engines.base import EngineSnapshot
from exporter.formulas import acceptance_length, acceptance_rate
from exporter.scrape import ScrapeError, Scraper, split_url
from gate.evidence.probes import (
    CLIENT_BOUND_FACTOR,
    Cell,
    ClientCeiling,
    Pairing,
    ProbeError,
    ProbeRecord,
    Quantiles,
)
from gate.inputs.fetch import SIDE_BYTES, FetchError, get_json
from gate.inputs.loading import Limits
from gate.inputs.redact import redact_url
from gate.probe import ceiling as client_ceiling
from gate.probe.batch import Batch, TimeUp, arrival_offsets, run_closed, run_open
from gate.probe.client import CompletionClient, RequestResult
from gate.probe.energy import EnergyMeter, open_meter
from gate.probe.progress import Meter, NoMeter
from gate.probe.workload import Mix, MixRequest, PromptShape, mixes_for, wanted_mixes
from gate.status import InputError

Progress = Callable[[str], None]


def stderr_progress(msg: str) -> None:
    print(f"[probe] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ProbeConfig:
    """Everything one campaign needs; the bounds (max_requests, time_limit, request_timeout) are hard."""

    engine_url: str
    arm: str  # "baseline" | "speculative"
    concurrencies: tuple[int, ...] = ()  # empty: each mix at its own (plan) concurrency
    repetitions: int = 5
    warmup_requests: int = 3
    requests_per_cell: int | None = None  # None: 2 × concurrency, at least 4
    request_timeout: float = 300.0
    time_limit: float = 3600.0
    max_requests: int = 5000
    model: str | None = None
    speculative: dict[str, Any] | None = None
    engine: str = "auto"
    api_key: str | None = None
    source: str | None = None
    request_rates: tuple[float, ...] = ()  # open loop: Poisson arrivals per second (gate.probe.batch)
    seed: int = 0  # open loop: repetition r draws its arrivals from random.Random(seed + r - 1), in both arms
    ceiling: bool = True  # measure the client's own ceiling at the start (gate.probe.ceiling)
    energy_source: str | None = None  # issue 38: "dcgm:URL" or "nvml" (gate.probe.energy); None: no energy
    energy_gpus: tuple[str, ...] = ()  # the GPUs the engine uses; empty: every GPU the source reads
    idle_seconds: float = 5.0  # the idle baseline's length, measured before the warm-up

    def cell_requests(self, concurrency: int) -> int:
        return self.requests_per_cell if self.requests_per_cell is not None else max(4, 2 * concurrency)

    def rate_requests(self) -> int:
        """Requests of an open-loop cell: --requests, default 16 (at most that many can be in flight)."""
        return self.requests_per_cell if self.requests_per_cell is not None else OPEN_LOOP_REQUESTS

    def prompts_needed(self, own: int | None) -> int:
        """Prompts a mix needs: one per request of its largest cell (at --concurrency, else its own)."""
        concurrencies = self.concurrencies or ((own,) if own is not None and not self.request_rates else ())
        if not concurrencies and not self.request_rates:
            raise ProbeError("a mix without a concurrency of its own needs --concurrency or --request-rate")
        return max([self.cell_requests(c) for c in concurrencies] + ([self.rate_requests()]
                                                                     if self.request_rates else []))

    def concurrencies_for(self, name: str, own: int | None) -> tuple[int, ...]:
        """The concurrencies a mix runs at: --concurrency, else its own (plan) concurrency, else none when the
        run is open loop (--request-rate only)."""
        if self.concurrencies:
            return self.concurrencies
        if self.request_rates:
            return ()
        if own is None:
            raise ProbeError(f"mix {name!r} has no concurrency of its own: pass --concurrency or --request-rate")
        return (own,)

    def points_for(self, name: str, own: int | None) -> list[tuple[int, float | None]]:
        """The mix's operating points in order: (concurrency, None) closed loop, then (requests, rate) open loop
        (an open-loop cell can have all its requests in flight)."""
        return [(c, None) for c in self.concurrencies_for(name, own)] + [
            (self.rate_requests(), r) for r in self.request_rates]

    def points_of(self, mix: Mix) -> list[tuple[int, float | None]]:
        return self.points_for(mix.name, mix.spec.concurrency)

    def requests_at(self, concurrency: int, rate: float | None) -> int:
        return self.cell_requests(concurrency) if rate is None else self.rate_requests()

    def total_requests(self, mixes: Sequence[tuple[str, int | None]]) -> int:
        """Requests of the whole campaign for mixes given as (name, own concurrency): cells and warm-up."""
        return sum(sum(self.requests_at(c, r) for c, r in self.points_for(name, own)) * self.repetitions
                   + self.warmup_requests for name, own in mixes)

    def check_bounds(self, mixes: Sequence[tuple[str, int | None]]) -> None:
        """The campaign's bounds, before any request or `/tokenize` call: every cell holds at least its
        concurrency in requests (else the record would state a width never reached), and the whole
        campaign at most `max_requests` requests."""
        for name, own in mixes:
            for c in self.concurrencies_for(name, own):
                if self.cell_requests(c) < c:
                    raise InputError(f"--requests {self.cell_requests(c)} is fewer than concurrency {c} (mix {name}): "
                                     f"a cell would never have {c} requests in flight")
        total = self.total_requests(mixes)
        if total > self.max_requests:
            raise ProbeError(f"the campaign needs {total} requests, more than --max-requests {self.max_requests}")
        refuse_arrivals([(self, mixes)], self.time_limit)

    def arrival_seconds(self, mixes: Sequence[tuple[str, int | None]]) -> float:
        """The expected seconds of the campaign's open-loop arrivals alone: a cell of n requests at R per second
        has its last arrival (n − 1) / R after its first on average, for every mix, rate and repetition."""
        n = self.rate_requests()
        return sum((n - 1) / r for r in self.request_rates) * self.repetitions * len(mixes)


def refuse_arrivals(arms: Sequence[tuple[ProbeConfig, Sequence[tuple[str, int | None]]]], time_limit: float) -> None:
    """ProbeError before the first request when the arms' open-loop arrivals are expected to take longer than the
    one time limit they share: such a campaign could only end at the limit without a record."""
    need = sum(cfg.arrival_seconds(mixes) for cfg, mixes in arms)
    if need <= time_limit:
        return
    cells = sum(len(cfg.request_rates) * cfg.repetitions * len(mixes) for cfg, mixes in arms)
    cfg = arms[0][0]
    rates = ", ".join(f"{r:g}" for r in cfg.request_rates)
    raise ProbeError(f"the open-loop arrivals alone are expected to take {need:,.6g} s ({cells} cell(s) of "
                     f"{cfg.rate_requests()} requests at {rates} per second: (requests - 1) / rate s each), more "
                     f"than --time-limit {time_limit:g} s; raise --request-rate or --time-limit, or lower --requests")


def _own(mix: Mix | PromptShape) -> tuple[str, int | None]:
    return (mix.name, mix.spec.concurrency) if isinstance(mix, Mix) else (mix.name, mix.concurrency)


def until(stop_at: float, seconds: float) -> float:
    """The deadline of one exchange: `seconds` from now, or the campaign's end when that comes first."""
    if time.monotonic() >= stop_at:
        raise TimeUp("no time left")
    return min(time.monotonic() + seconds, stop_at)


def quantiles(values: Sequence[float]) -> Quantiles:
    """p50/p90/p99 by linear interpolation between order statistics (numpy's default); empty → nulls."""
    xs = sorted(v for v in values if math.isfinite(v))
    if not xs:
        return Quantiles()

    def q(p: float) -> float:
        pos = p * (len(xs) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)

    return Quantiles(p50=q(0.5), p90=q(0.9), p99=q(0.99))


OPEN_LOOP_REQUESTS = 16
SIDE_LIMITS = Limits(max_bytes=SIDE_BYTES)  # /v1/models, /version, /server_info: small JSON documents
MAX_MODEL_NAME = 512


def served_model(base_url: str, deadline: float, api_key: str | None) -> str:
    """The first model `/v1/models` lists (what requests must name); one bounded read by `deadline`."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    shown = redact_url(f"{base_url}/v1/models")
    try:
        status, doc = get_json(f"{base_url}/v1/models", deadline=deadline, max_bytes=SIDE_BYTES, what=shown,
                               limits=SIDE_LIMITS, headers=headers)
    except FetchError as e:
        raise ProbeError(f"{shown} gave no model ({e}); pass --model") from None
    if status != 200:
        raise ProbeError(f"{shown} gave no model (HTTP {status}); pass --model")
    try:
        name = doc["data"][0]["id"]
    except (KeyError, IndexError, TypeError):
        raise ProbeError(f"{shown} gave no model (no data[0].id); pass --model") from None
    if not isinstance(name, str) or not name or len(name) > MAX_MODEL_NAME or not name.isprintable():
        raise ProbeError(f"{shown} gave no usable model name; pass --model")
    return name


def engine_version(base_url: str, snap: EngineSnapshot, deadline: float) -> str | None:
    """vLLM `GET /version`, else SGLang `/get_server_info` / `/server_info` `version`, else the page's; every
    read bounded by `deadline` (a read that fails or times out is skipped)."""
    for path in ("/version", "/server_info", "/get_server_info"):
        if time.monotonic() >= deadline:
            break
        try:
            status, doc = get_json(base_url + path, deadline=deadline, max_bytes=SIDE_BYTES, what=path,
                                   limits=SIDE_LIMITS)
        except FetchError:
            continue
        v = doc.get("version") if status == 200 and isinstance(doc, dict) else None
        if isinstance(v, str) and v and len(v) <= MAX_MODEL_NAME and v.isprintable():
            return v
    return snap.version


@dataclass
class Pages:
    """The engine's `/metrics`, read through one exporter Scraper for the whole campaign (side information —
    SGLang's draft-token setting, the version — asked once, again after a restart); every read bounded by
    the request timeout (at most 30 s) and the campaign's end."""

    scraper: Scraper
    request_timeout: float
    stop_at: float

    def read(self) -> EngineSnapshot:
        left = self.stop_at - time.monotonic()
        if left <= 0:
            raise TimeUp("no time left to read /metrics")
        self.scraper.timeout = min(self.request_timeout, 30.0, left)
        try:
            return self.scraper.scrape()
        except ScrapeError as e:
            if time.monotonic() >= self.stop_at:
                raise TimeUp(f"reading /metrics: {e}") from None
            raise ProbeError(f"cannot read the engine's /metrics: {e}") from None


def _check_arm(snap: EngineSnapshot, arm: str, model: str) -> None:
    """Fail closed on a mislabelled arm: the engine's own counters say whether it speculates."""
    speculating = any(s.spec is not None for s in snap.streams)
    if arm == "speculative" and not speculating:
        raise ProbeError("--arm speculative, but the engine reports no speculative-decoding counters "
                         "(is it started with a speculative config?)")
    if arm == "baseline" and speculating:
        raise ProbeError("--arm baseline, but the engine reports speculative-decoding counters "
                         "(it is running with speculation)")


@dataclass(frozen=True)
class CellAcceptance:
    """Speculation counts of one cell, summed over the model's streams (data-parallel ranks)."""

    reset: bool
    generation_tokens: float | None
    drafts: float | None
    draft_tokens: float | None
    accepted_tokens: float | None

    @property
    def acceptance_length(self) -> float | None:
        """L = 1 + Σaccepted / Σdrafts (incl. the bonus token); None without drafts."""
        if self.drafts is None or self.accepted_tokens is None or self.drafts < 1:
            return None
        return acceptance_length(self.accepted_tokens, self.drafts)

    @property
    def acceptance_rate(self) -> float | None:
        """a = Σaccepted / Σdraft tokens."""
        if self.draft_tokens is None or self.accepted_tokens is None:
            return None
        return acceptance_rate(self.accepted_tokens, self.draft_tokens)


def _sum(values: Sequence[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else float(sum(v for v in values if v is not None))


def cell_acceptance(before: EngineSnapshot, after: EngineSnapshot, model: str) -> CellAcceptance | None:
    """The cell's deltas through the exporter's own derivation (one source of truth for the engines'
    names, SGLang's verify-call normalisation and the restart rule); None when the page has no stream
    of this model."""
    stats = [w for w in derive_window(before, after) if w.model in (model, None)]
    if not stats:
        return None
    spec = [w for w in stats if w.has_spec]
    return CellAcceptance(
        reset=any(w.reset for w in stats),
        generation_tokens=_sum([w.generation_tokens for w in stats]),
        drafts=_sum([w.drafts for w in spec]) if spec else None,
        draft_tokens=_sum([w.draft_tokens for w in spec]) if spec else None,
        accepted_tokens=_sum([w.accepted_tokens for w in spec]) if spec else None)


def engine_step_time(before: EngineSnapshot, after: EngineSnapshot, model: str) -> tuple[float, float] | None:
    """(mean seconds, observations) of the engine's own inter-token latency over a cell, summed over the model's
    streams; None where the page has no such histogram, it went back (a restart) or nothing was observed.

    Why the engine's figure beside the client's TPOT (issue 39, seed 004's cycle decomposition): vLLM observes
    one gap per engine step and request, so the mean is the step's wall time as the engine saw it — the target's
    step on the baseline arm, the whole draft-and-verify cycle on the speculative one."""
    total = count = 0.0
    seen = False
    for s in after.streams:
        if s.model not in (model, None) or s.itl is None:
            continue
        b = before.stream(s.model, s.rank)
        if b is None or b.itl is None or None in (s.itl.sum, s.itl.count, b.itl.sum, b.itl.count):
            return None
        d_sum, d_count = float(s.itl.sum) - float(b.itl.sum), float(s.itl.count) - float(b.itl.count)  # type: ignore[arg-type]
        if d_sum < 0 or d_count < 0:
            return None
        total, count, seen = total + d_sum, count + d_count, True
    if not seen or count < 1 or total <= 0:
        return None
    return total / count, count


def build_cell(mix: Mix, concurrency: int, repetition: int, results: Sequence[RequestResult],
               wall: float, before: EngineSnapshot, after: EngineSnapshot, model: str,
               progress: Progress) -> Cell:
    """One cell's record from its requests and the two `/metrics` snapshots around it."""
    ok = [r for r in results if r.ok]
    out_tokens = sum(r.completion_tokens or 0 for r in ok)
    prompt = [r.prompt_tokens for r in ok]
    acc = cell_acceptance(before, after, model)
    where = f"mix {mix.name} c={concurrency} rep {repetition}"
    if acc is None or (not acc.reset and acc.generation_tokens is None):
        progress(f"notice: the engine's /metrics has no generation-token counter for model {model}: the cells' "
                 "tokens are checked against the streams only (usage = max_tokens = streamed ids)")
    elif not acc.reset and acc.generation_tokens is not None and acc.generation_tokens + 0.5 < out_tokens:
        raise ProbeError(f"{where}: the requests report {out_tokens} completion tokens, the engine's own "
                         f"generation counter rose by {acc.generation_tokens:g}: its answers contradict its counters; "
                         "no record written")
    length = rate = drafts = draft_tokens = accepted = None
    if acc is not None and not acc.reset:
        if acc.generation_tokens is not None and acc.generation_tokens > out_tokens + 0.5:
            progress(f"notice: the engine generated {acc.generation_tokens:g} tokens in this cell, the probe's "
                     f"requests got {out_tokens}: other traffic shares the engine; acceptance not attributed")
        else:
            length, rate = acc.acceptance_length, acc.acceptance_rate
            drafts, draft_tokens, accepted = acc.drafts, acc.draft_tokens, acc.accepted_tokens
    reset = bool(acc and acc.reset)
    step = None if reset or (acc is not None and acc.generation_tokens is not None
                             and acc.generation_tokens > out_tokens + 0.5) else engine_step_time(before, after, model)
    per_req = [r.acceptance_length for r in ok]
    refused = Counter(r.acceptance_refused for r in ok if r.acceptance_refused is not None)
    if refused:
        reasons = "; ".join(f"{why} (x{n})" for why, n in refused.most_common())
        progress(f"notice: the per-request acceptance of {sum(refused.values())} of {len(ok)} request(s) was "
                 f"refused by the parser, so this cell has no per-request L: {reasons}")
    return Cell(
        mix=mix.name, concurrency=concurrency, repetition=repetition, requests=len(results),
        output_tokens=out_tokens,
        prompt_tokens=sum(p for p in prompt if p is not None) if ok and all(p is not None for p in prompt) else None,
        wall_seconds=max(wall, 1e-9), served_tokens_per_second=out_tokens / max(wall, 1e-9),
        failed_requests=len(results) - len(ok),
        ttft_seconds=quantiles([t for r in ok if (t := r.ttft) is not None]),
        tpot_seconds=quantiles([t for r in ok if (t := r.tpot) is not None]),
        chunk_gap_seconds=quantiles([g for r in ok for g in r.chunk_gaps]),
        acceptance_length=length, acceptance_rate=rate, drafts=drafts, draft_tokens=draft_tokens,
        accepted_tokens=accepted,
        per_request_acceptance_length=([float(a) for a in per_req if a is not None]
                                       if ok and all(a is not None for a in per_req) else None),
        metrics_reset=reset,
        engine_step_seconds=step[0] if step else None, engine_steps=step[1] if step else None,
    )


def append_record(previous: ProbeRecord, new: ProbeRecord) -> ProbeRecord:
    """`new`'s cells after `previous`'s, repetitions numbered on per (mix, concurrency); refused unless the
    two records are the same arm of the same engine, version, model and mixes (else they are two arms)."""
    for what in ("arm", "engine", "engine_version", "model", "speculative"):
        if getattr(previous, what) != getattr(new, what):
            raise ProbeError(f"--append: the existing record's {what} is {getattr(previous, what)!r}, this run's "
                             f"{getattr(new, what)!r}")
    if [m.model_dump() for m in previous.workload] != [m.model_dump() for m in new.workload]:
        raise ProbeError("--append: the existing record probed other mixes")
    last: dict[tuple[str, int], int] = {}
    for c in previous.cells:
        last[(c.mix, c.concurrency)] = max(last.get((c.mix, c.concurrency), 0), c.repetition)
    cells = list(previous.cells)
    for c in new.cells:
        cells.append(c.model_copy(update={"repetition": last.get((c.mix, c.concurrency), 0) + c.repetition}))
    reps = max(c.repetition for c in cells)
    return previous.model_copy(update={"cells": cells, "repetitions": reps})


SETTLE_SECONDS = 2.0
SETTLE_POLL = 0.05


def _settled_after(pages: Pages, before: EngineSnapshot, results: Sequence[RequestResult],
                   model: str) -> EngineSnapshot:
    """The `/metrics` page after a cell, once the engine's counters hold every token the cell's requests
    received. Engines update their counters beside the stream, so the last step of a cell can land on
    the page a moment after the client saw `[DONE]`; read again (every 50 ms, at most 2 s, never past the
    campaign's end) until the generated tokens cover the cell's, else take the last page (build_cell then
    sees the shortfall)."""
    want = sum(r.completion_tokens or 0 for r in results if r.ok)
    deadline = min(time.monotonic() + SETTLE_SECONDS, pages.stop_at)
    while True:
        after = pages.read()
        acc = cell_acceptance(before, after, model)
        if acc is None or acc.reset or acc.generation_tokens is None or acc.generation_tokens + 0.5 >= want \
                or time.monotonic() + SETTLE_POLL > deadline:
            return after
        time.sleep(SETTLE_POLL)


def _once(progress: Progress) -> Progress:
    """`progress` that says each distinct line once (a notice true of every cell is told once)."""
    said: set[str] = set()

    def say(msg: str) -> None:
        if msg not in said:
            said.add(msg)
            progress(msg)

    return say


@dataclass
class Campaign:
    """One arm's campaign, in steps, so that `probe ab` can interleave two: `start` (arm check, version, client
    ceiling, warm-up), `repetition(r)` (every cell of repetition r), `record()`. `run_probe` is the three in
    a row; `probe_ab` alternates two campaigns' repetitions ABBA."""

    cfg: ProbeConfig
    mixes: Sequence[Mix]
    model: str
    progress: Progress
    stop_at: float
    pages: Pages
    first: EngineSnapshot | None = None
    cells: list[Cell] = field(default_factory=list)
    client: CompletionClient | None = None
    snap: EngineSnapshot | None = None
    version: str | None = None
    ceiling: ClientCeiling | None = None
    meter: Meter = field(default_factory=NoMeter)  # the bar's counts (gate.probe.progress): requests, cells
    energy: EnergyMeter | None = None  # issue 38: joules per cell when cfg.energy_source is set

    @classmethod
    def of(cls, cfg: ProbeConfig, mixes: Sequence[Mix], model: str, progress: Progress, stop_at: float,
           first: EngineSnapshot | None = None, meter: Meter | None = None) -> Campaign:
        _, metrics_url = split_url(cfg.engine_url)
        cfg.check_bounds([_own(m) for m in mixes])
        pages = Pages(Scraper(metrics_url, engine=cfg.engine, api_key=cfg.api_key), cfg.request_timeout, stop_at)
        run = cls(cfg, mixes, model, _once(progress), stop_at, pages, first, meter=meter or NoMeter())
        run.meter.expect(units=cfg.total_requests([_own(m) for m in mixes]), steps=run.n_cells)
        return run

    @property
    def n_cells(self) -> int:
        return sum(len(self.cfg.points_of(m)) for m in self.mixes) * self.cfg.repetitions

    def start(self) -> None:
        cfg, mixes, progress = self.cfg, self.mixes, self.progress
        base, _ = split_url(cfg.engine_url)
        snap = self.first or self.pages.read()
        _check_arm(snap, cfg.arm, self.model)
        self.snap = snap
        self.version = engine_version(base, snap, until(self.stop_at, min(cfg.request_timeout, 10.0)))
        temps = {m.spec.temperature for m in mixes}
        if len(temps) != 1:
            raise ProbeError("one probe run sends one temperature; probe sampled and greedy mixes separately")
        # One client for every request: it holds no connection, each request is its own exchange.
        self.client = CompletionClient(base, self.model, timeout=cfg.request_timeout, api_key=cfg.api_key,
                                       temperature=temps.pop())
        if cfg.energy_source is not None:
            self.energy = self.energy or open_meter(cfg.energy_source, cfg.energy_gpus)
            idle = self.energy.measure_idle(cfg.idle_seconds)
            progress(f"energy: idle baseline {idle:.1f} W over {cfg.idle_seconds:g} s before the run "
                     f"({cfg.energy_source}; shown on every cell, not subtracted)")
        if cfg.ceiling:
            widths = sorted({min(c, client_ceiling.MAX_CEILING_CONCURRENCY) for m in mixes
                             for c, _ in cfg.points_of(m)})
            self.ceiling = client_ceiling.measure(widths)
            progress("client ceiling (null engine on loopback; received, and what the null engine sent): " + ", ".join(
                f"c={p.concurrency} {p.tokens_per_second:,.0f} tok/s"
                + (f" (sent {p.server_tokens_per_second:,.0f})" if p.server_tokens_per_second is not None else "")
                for p in self.ceiling.points))
        warmed: list[RequestResult] = []
        for mix in mixes:
            if cfg.warmup_requests:
                progress(f"warm-up: {cfg.warmup_requests} request(s) of mix {mix.name} (not counted)")
                width = max(c for c, _ in cfg.points_of(mix))
                res = run_closed(self.client, mix.prompts, mix.output_tokens, cfg.warmup_requests,
                                 min(width, cfg.warmup_requests), f"mix {mix.name}", stop_at=self.stop_at,
                                 done=self.meter.advance).results
                bad = [r for r in res if not r.ok]
                if len(bad) == len(res):
                    raise ProbeError(f"every warm-up request failed: {bad[0].error}")
                warmed += res
        if warmed:  # the warm-up's last tokens on the page before the first cell's `before` is read
            _settled_after(self.pages, snap, warmed, self.model)

    def repetition(self, rep: int) -> list[Cell]:
        """Every cell of repetition `rep`, in mix and point order; the cells also go onto `self.cells`."""
        cfg, progress, client = self.cfg, self.progress, self.client
        assert client is not None, "start() first"
        out: list[Cell] = []
        for mix in self.mixes:
            for conc, rate in cfg.points_of(mix):
                before = self.pages.read()
                count = cfg.requests_at(conc, rate)
                what = f"mix {mix.name}"
                batch: Batch
                if self.energy is not None:
                    self.energy.begin()
                if rate is None:
                    batch = run_closed(client, mix.prompts, mix.output_tokens, count, conc, what,
                                       stop_at=self.stop_at, done=self.meter.advance)
                else:
                    batch = run_open(client, mix.prompts, mix.output_tokens,
                                     arrival_offsets(rate, count, cfg.seed + rep - 1), what, stop_at=self.stop_at,
                                     done=self.meter.advance)
                energy = self.energy.end() if self.energy is not None else None
                after = _settled_after(self.pages, before, batch.results, self.model)
                cell = build_cell(mix, conc, rep, batch.results, batch.wall, before, after, self.model, progress)
                extra: dict[str, Any] = {"started_at": round(batch.started_at, 6)}
                if energy is not None:
                    extra["energy"] = energy
                if rate is not None:
                    extra.update(request_rate=rate, arrival_seed=cfg.seed + rep - 1,
                                 arrival_offsets_seconds=list(batch.offsets or ()))
                if self.ceiling is not None:
                    extra["client_bound"] = (cell.served_tokens_per_second * CLIENT_BOUND_FACTOR
                                             >= self.ceiling.at(conc, rate))
                cell = cell.model_copy(update=extra)
                out.append(cell)
                self.cells.append(cell)
                self.meter.step_done()
                length = f", L {cell.acceptance_length:.2f}" if cell.acceptance_length is not None else ""
                if cell.engine_step_seconds is not None:
                    length += f", engine step {1000 * cell.engine_step_seconds:.2f} ms"
                failed = f", {cell.failed_requests} FAILED" if cell.failed_requests else ""
                bound = ", CLIENT-BOUND (no evidence)" if cell.client_bound else ""
                at = f"c={conc}" if rate is None else f"rate={rate:g}/s"
                progress(f"[{len(self.cells)}/{self.n_cells}] {cfg.arm} {mix.name} {at} rep {rep}/{cfg.repetitions}: "
                         f"{cell.output_tokens} tokens in {cell.wall_seconds:.2f} s = "
                         f"{cell.served_tokens_per_second:.1f} tok/s{length}{failed}{bound}")
                if cell.failed_requests == cell.requests:
                    err = next(r.error for r in batch.results if r.error)
                    raise ProbeError(f"every request of a cell failed: {err}")
        return out

    def record(self, pairing: Pairing | None = None) -> ProbeRecord:
        assert self.snap is not None, "start() first"
        cfg = self.cfg
        return ProbeRecord(
            arm=cfg.arm, engine=self.snap.engine, engine_version=self.version, model=self.model,
            speculative=cfg.speculative, workload=[m.spec for m in self.mixes], warmup_requests=cfg.warmup_requests,
            repetitions=cfg.repetitions, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            source=cfg.source, cells=self.cells, client_ceiling=self.ceiling, pairing=pairing)

    def close(self) -> None:
        self.pages.scraper.close()


def run_probe(cfg: ProbeConfig, mixes: Sequence[Mix], model: str, progress: Progress = stderr_progress,
              first: EngineSnapshot | None = None, stop_at: float | None = None,
              meter: Meter | None = None) -> ProbeRecord:
    """The whole campaign; raises ProbeError when a bound is hit or the engine cannot be probed. `stop_at`
    (monotonic): the campaign's end, default `time_limit` from now; `meter`: the progress bar's counts."""
    stop_at = time.monotonic() + cfg.time_limit if stop_at is None else stop_at
    run = Campaign.of(cfg, mixes, model, progress, stop_at, first, meter)
    try:
        run.start()
        for rep in range(1, cfg.repetitions + 1):
            run.repetition(rep)
    except TimeUp as e:
        raise TimeUp(f"time limit {cfg.time_limit:g} s reached after {len(run.cells)} of {run.n_cells} cells ({e}); "
                     "no record written") from None
    finally:
        run.close()
    return run.record()


def abba(rep: int) -> tuple[int, int]:
    """The arms' order in repetition `rep` (0 = baseline, 1 = speculative): A B, then B A, then A B, ..."""
    return (0, 1) if rep % 2 == 1 else (1, 0)


def pair_cells(base: Sequence[Cell], spec: Sequence[Cell]) -> tuple[list[Cell], list[Cell]]:
    """Each cell with `pair_apart_seconds` = |its start − its partner's| (same point and repetition)."""
    starts_b = {(*c.point, c.repetition): c.started_at for c in base}
    starts_s = {(*c.point, c.repetition): c.started_at for c in spec}

    def gap(c: Cell, other: dict[Any, float | None]) -> Cell:
        o = other.get((*c.point, c.repetition))
        if o is None or c.started_at is None:
            return c
        return c.model_copy(update={"pair_apart_seconds": round(abs(c.started_at - o), 6)})

    return [gap(c, starts_s) for c in base], [gap(c, starts_b) for c in spec]


def probe_ab(cfgs: tuple[ProbeConfig, ProbeConfig], request: MixRequest, partners: tuple[str, str],
             progress: Progress = stderr_progress, meter: Meter | None = None) -> tuple[ProbeRecord, ProbeRecord]:
    """`specgate probe ab`: both arms, one command. Each arm's mixes (its own engine's tokenizer), arm check,
    ceiling and warm-up once; then per repetition r both arms' cells, baseline first for odd r and speculative
    first for even r (ABBA: a drift linear in time weighs on both arms alike), all inside one `--time-limit`.
    The records carry `pairing` (order, the other record's file name) and each cell `pair_apart_seconds`."""
    base_cfg = cfgs[0]  # its repetitions and time limit rule the run (both arms get the same flags)
    stop_at = time.monotonic() + base_cfg.time_limit
    wanted = wanted_mixes(request)
    for cfg in cfgs:
        cfg.check_bounds([_own(w) for w in wanted])
    refuse_arrivals([(cfg, [_own(w) for w in wanted]) for cfg in cfgs], base_cfg.time_limit)
    runs: list[Campaign] = []
    try:
        for cfg in cfgs:
            base, _ = split_url(cfg.engine_url)
            model = cfg.model or served_model(base, until(stop_at, min(cfg.request_timeout, 10.0)), cfg.api_key)
            mixes = mixes_for(wanted, base, model, min(cfg.request_timeout, 30.0), cfg.api_key, cfg.prompts_needed,
                              stop_at)
            runs.append(Campaign.of(replace(cfg, model=model), mixes, model, progress, stop_at, meter=meter))
        for run in runs:
            run.start()
        for rep in range(1, base_cfg.repetitions + 1):
            for i in abba(rep):
                runs[i].repetition(rep)
    except TimeUp as e:
        done = sum(len(r.cells) for r in runs)
        raise TimeUp(f"time limit {base_cfg.time_limit:g} s reached after {done} cells ({e}); no record written") \
            from None
    finally:
        for run in runs:
            run.close()
    b, s = (run.record(Pairing(partner=partner)) for run, partner in zip(runs, partners[::-1], strict=True))
    cells_b, cells_s = pair_cells(b.cells, s.cells)
    return b.model_copy(update={"cells": cells_b}), s.model_copy(update={"cells": cells_s})


def speculative_settings(arm: str, config: str | None) -> dict[str, Any] | None:
    """The record's `speculative` from `--speculative-config` (a JSON object, recorded as is); the speculative
    arm without one records unknown method and depth, the baseline arm none (InputError for one given to it)."""
    if config is None:
        return {"method": None, "num_speculative_tokens": None} if arm == "speculative" else None
    if arm == "baseline":
        raise InputError("--speculative-config belongs to the speculative arm")
    try:
        spec = json.loads(config)
    except json.JSONDecodeError as e:
        raise InputError(f"--speculative-config is not JSON: {e.msg}") from None
    if not isinstance(spec, dict):
        raise InputError("--speculative-config must be a JSON object")
    return spec


def probe(cfg: ProbeConfig, request: MixRequest, previous: ProbeRecord | None = None,
          progress: Progress = stderr_progress, meter: Meter | None = None) -> ProbeRecord:
    """`specgate probe`: the mixes read first (flags and files, nothing sent) and the campaign's bounds checked
    (`check_bounds`), then the engine's model, the prompts, the campaign, and `previous`'s cells before the
    new ones (`--append`); all of it inside one `--time-limit`."""
    stop_at = time.monotonic() + cfg.time_limit
    wanted = wanted_mixes(request)
    cfg.check_bounds([_own(w) for w in wanted])
    base, _ = split_url(cfg.engine_url)
    try:
        model = cfg.model or served_model(base, until(stop_at, min(cfg.request_timeout, 10.0)), cfg.api_key)
        cfg = replace(cfg, model=model)
        mixes = mixes_for(wanted, base, model, min(cfg.request_timeout, 30.0), cfg.api_key, cfg.prompts_needed,
                          stop_at)
    except ProbeError as e:  # cut at the campaign's end: the time limit is the reason
        if isinstance(e, TimeUp) or time.monotonic() >= stop_at:
            raise TimeUp(f"time limit {cfg.time_limit:g} s reached before the first cell ({e}); no record written") \
                from None
        raise
    record = run_probe(cfg, mixes, model, progress, stop_at=stop_at, meter=meter)
    return append_record(previous, record) if previous is not None else record
