"""How a cell's requests are released: closed loop (C workers, each issuing requests back to back) or open loop
(requests sent at seeded Poisson arrival times, whatever is in flight).

Why a module of its own: the probe's cells and the client's own ceiling (`gate.probe.ceiling`, against a null
engine) must release requests by the same code, or the ceiling measures another client.

Closed loop at concurrency C, as `vllm bench serve --max-concurrency C` does it (it starts every request as a
task and lets C through a semaphore, so the first C leave together and each later one leaves when a slot
frees): C worker threads take the cell's requests one after another from one shared iterator. The workers
wait at a barrier before their first request, so the first C sends leave together instead of staggered by
thread start-up (the release spread is measured by `bench/probe_ceiling.py`); the cell's clock starts when
the barrier opens.

Open loop at rate R (requests/s), as `vllm bench serve --request-rate R` with its Poisson process: the
inter-arrival gaps are exponential with mean 1/R drawn from `random.Random(seed)`, the first request at 0;
request i is sent at `start + offset_i` on its own thread, whether or not earlier ones finished. The same
seed gives both arms the same arrival times (common random numbers: the arms differ by the engine, not by
the draw). The cell's clock runs from the first send to the last `[DONE]`, as in closed loop.

With `stop_at` (the campaign's end, monotonic) no request starts after it, no wait for an arrival runs past
it (an open-loop cell at 0.01/s ends at the time limit, not at its last arrival) and those in flight are cut
there (`TimeUp`). `done`, when given, is called once as each request ends (the progress bar's requests; from the
worker threads, so it must be thread-safe).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from gate.evidence.probes import ProbeError
from gate.probe.client import CompletionClient, RequestResult

OFFSET_DIGITS = 6  # arrival offsets are recorded to the microsecond


class TimeUp(ProbeError):
    """The campaign's time limit passed (a request, a read or a tokenize call was cut there)."""


@dataclass(frozen=True)
class Batch:
    """One cell's requests as sent: results in request order, the wall clock (first send to last end),
    `started_at` (time.time() when the cell's clock started) and, open loop, the scheduled offsets."""

    results: list[RequestResult]
    wall: float
    started_at: float
    offsets: tuple[float, ...] | None = None


def arrival_offsets(rate: float, count: int, seed: int) -> tuple[float, ...]:
    """Poisson arrivals: offset_0 = 0, offset_i = offset_{i-1} + Exp(rate) from random.Random(seed)."""
    rng = random.Random(seed)
    out, t = [], 0.0
    for _ in range(count):
        out.append(round(t, OFFSET_DIGITS))
        t += rng.expovariate(rate)
    return tuple(out)


def _finish(results: Sequence[RequestResult | None], count: int, start: float, started_at: float, what: str,
            offsets: tuple[float, ...] | None = None) -> Batch:
    done = [r for r in results if r is not None]
    if len(done) < count or any(r.stopped for r in done):
        raise TimeUp(f"requests of {what} in flight were stopped")
    end = max((r.end for r in done), default=time.monotonic())
    return Batch(done, end - start, started_at, offsets)


def run_closed(client: CompletionClient, prompts: Sequence[str | tuple[int, ...]], max_tokens: int, count: int,
               concurrency: int, what: str, offset: int = 0, stop_at: float | None = None,
               done: Callable[[], None] | None = None) -> Batch:
    """`count` requests, `concurrency` in flight at a time (module docstring: the barrier)."""
    results: list[RequestResult | None] = [None] * count
    todo = iter(range(count))  # shared by the workers: next() on a range iterator is atomic in CPython
    workers = min(concurrency, count)
    gate = threading.Barrier(workers + 1)  # the workers and this thread, which starts the clock

    def worker() -> None:
        gate.wait()
        for i in todo:
            if stop_at is not None and time.monotonic() >= stop_at:
                return
            results[i] = client.complete(prompts[(offset + i) % len(prompts)], max_tokens, stop_at)
            if done is not None:
                done()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(worker) for _ in range(workers)]
        gate.wait()
        start, started_at = time.monotonic(), time.time()
        for f in futures:
            f.result()
    return _finish(results, count, start, started_at, what)


def run_open(client: CompletionClient, prompts: Sequence[str | tuple[int, ...]], max_tokens: int,
             offsets: Sequence[float], what: str, offset: int = 0, stop_at: float | None = None,
             done: Callable[[], None] | None = None) -> Batch:
    """One request at each of `offsets` (seconds after the start), each on its own thread (module docstring)."""
    count = len(offsets)
    results: list[RequestResult | None] = [None] * count

    def one(i: int) -> None:
        results[i] = client.complete(prompts[(offset + i) % len(prompts)], max_tokens, stop_at)
        if done is not None:
            done()

    with ThreadPoolExecutor(max_workers=max(count, 1)) as pool:
        start, started_at = time.monotonic(), time.time()
        for i, at in enumerate(offsets):
            now = time.monotonic()
            # the wait for an arrival is capped at the campaign's end: an arrival past it is never waited for
            wait = start + at - now if stop_at is None else min(start + at, stop_at) - now
            if wait > 0:
                time.sleep(wait)
            if stop_at is not None and time.monotonic() >= stop_at:
                break
            pool.submit(one, i)
    return _finish(results, count, start, started_at, what, tuple(offsets))
