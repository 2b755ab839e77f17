"""The probe client's own ceiling on this machine: its rate against a null engine (`gate.probe.null_engine`).

Why measured at probe start, not taken from a cached bench figure: the ceiling is the client's CPU cost per
chunk, and on a shared machine that depends on what else runs now (the issue's 2-core CI machine with other
load); a figure from another day or machine would not say whether *this* run's cells were client-bound. It
costs about a second, most of it the null engine's process start: one warm-up request (not counted), then per
concurrency C of the run `CEILING_TRIALS` trials of `max(2C, 4)` requests of `CEILING_TOKENS` one-token chunks
through the same release code (`gate.probe.batch.run_closed`) and the same client as the cells; the point is
the trial of median rate. Why trials: one trial lasts tens of milliseconds, so one scheduler stall of a loaded
machine decided it — on the 2-core machine at load 12 a single trial read 134 tok/s at C = 2 (its usual
5,000-37,000) and marked real 209 tok/s vLLM cells client-bound, cells the client had just timed faster than
that "ceiling". The median of three is not moved by one stall and is not the luckiest trial either.

tokens_per_second = tokens received / wall (first send to last `[DONE]`), the cells' own formula; the null
engine's own send rate (tokens / its first to last byte, its clock) is recorded beside it. A cell's served
tokens/s within `CLIENT_BOUND_FACTOR` (2×) of the ceiling at its concurrency is client-bound
(`gate.evidence.probe_vetting.client_bound`): no evidence.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from gate.evidence.probes import CeilingPoint, ClientCeiling, ProbeError
from gate.inputs.fetch import get_json
from gate.inputs.loading import Limits
from gate.probe.batch import run_closed
from gate.probe.client import CompletionClient

CEILING_TOKENS = 64
CEILING_TRIALS = 3  # per concurrency; the median trial is the point (module docstring)
MAX_CEILING_CONCURRENCY = 64  # wider cells are held to the ceiling at 64 (the bench measures to 64)
START_SECONDS = 10.0
METHOD = ("null engine on loopback (gate.probe.null_engine: vLLM 0.32's chunks, one token each, as fast as it "
          f"can), measured at probe start through the probe's own client and release; median of {CEILING_TRIALS} "
          "trials")


@dataclass
class NullEngine:
    """`python -m gate.probe.null_engine` as a child process on a free loopback port; stopped by its own PID."""

    proc: subprocess.Popen[str] | None = None
    port: int = 0

    def __enter__(self) -> NullEngine:
        self.proc = subprocess.Popen([sys.executable, "-m", "gate.probe.null_engine"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the port; the child prints it once it listens
        if not line.strip().isdigit():
            self.__exit__()
            raise ProbeError("the null engine for the client ceiling did not start")
        self.port = int(line)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stats(self) -> dict[str, object]:
        _, doc = get_json(f"{self.url}/stats", deadline=time.monotonic() + START_SECONDS, max_bytes=4096,
                          what="null engine /stats", limits=Limits(max_bytes=4096))
        return doc if isinstance(doc, dict) else {}

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def measure_point(engine: NullEngine, concurrency: int, tokens: int = CEILING_TOKENS,
                  requests: int | None = None, timeout: float = 60.0) -> tuple[CeilingPoint, float]:
    """One concurrency against the null engine: the point, and the release spread (seconds between the first
    and the last of the first C sends)."""
    client = CompletionClient(engine.url, "null", timeout=timeout)
    n = requests if requests is not None else max(2 * concurrency, 4)
    engine.stats()  # reset its counters
    batch = run_closed(client, ((1, 2, 3, 4),), tokens, n, concurrency, "client ceiling")
    bad = next((r.error for r in batch.results if not r.ok), None)
    if bad is not None:
        raise ProbeError(f"the client ceiling's null engine failed a request: {bad}")
    got = sum(r.completion_tokens or 0 for r in batch.results)
    sent = engine.stats()
    first, last, sent_tokens = sent.get("first_byte"), sent.get("last_byte"), sent.get("tokens")
    server = (sent_tokens / (last - first) if isinstance(first, float) and isinstance(last, float) and last > first
              and isinstance(sent_tokens, int) else None)
    firsts = sorted(r.sent for r in batch.results)[:min(concurrency, n)]
    return (CeilingPoint(concurrency=concurrency, tokens_per_second=got / max(batch.wall, 1e-9),
                         server_tokens_per_second=server), firsts[-1] - firsts[0])


def measure(concurrencies: Sequence[int], tokens: int = CEILING_TOKENS, trials: int = CEILING_TRIALS) -> ClientCeiling:
    """The ceiling at each distinct concurrency (module docstring): after one warm-up request, the median-rate
    trial of `trials`; ProbeError when the null engine fails."""
    with NullEngine() as engine:
        measure_point(engine, 1, tokens, requests=1)  # first connection, first chunks built: not counted
        points = []
        for c in sorted(set(concurrencies)):
            runs = sorted((measure_point(engine, c, tokens)[0] for _ in range(trials)),
                          key=lambda p: p.tokens_per_second)
            points.append(runs[len(runs) // 2])
    return ClientCeiling(method=METHOD, output_tokens=tokens, points=points)

