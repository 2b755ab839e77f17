"""The probe as an instrument on the real vLLM 0.32 (issue 23 items 3, 4): open loop and both arms in one command.

Two tiny vLLM 0.32 engines for the module, up at once (started together, so their start-ups overlap): one
without speculation and one with ngram (k = 3), the harness's flags (`--max-num-seqs 8`, 8 MiB of KV cache).
Short cells (16-token prompts of the engine's tokenizer, 16 output tokens), since what is proven here is how
requests are released and what the records say about it, not a speedup:

1. open loop: `specgate probe --request-rate 4,16 --seed 11` on each engine writes cells per rate whose
   `arrival_seed` is seed + repetition − 1 and whose `arrival_offsets_seconds` are that seed's Poisson draw
   (recomputed here from `random.Random(seed).expovariate(rate)`, not through the probe's own function), each
   cell lasting at least its last arrival; `compare` gives one row per rate and either a `crossover_request_rate`
   or "none measured" with each point's reason (2 repetitions: the rank test cannot decide, so it says why);
2. `specgate probe ab`: both records from one command, `pairing` {order ABBA, the other file}, the cells' start
   times in ABBA order (baseline first in odd repetitions, speculative first in even ones), `pair_apart_seconds`
   = |start − partner's start|, which `compare` reports (pairs, median and largest gap) in JSON and text.
Every probe here measures its client's ceiling at start (the null engine; the rule is not skipped), and the
tiny engines' tens to hundreds of tokens/s are asserted to lie far below it (no cell client-bound).

Cost: two engine start-ups overlapped (~40-70 s on the shared 2-core machine) and about 30 s of traffic.
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import harness
import pytest
import vllm_live

from gate.evidence.probes import ProbeRecord, load_record

SEED = 11
RATES = (4.0, 16.0)
RATE_REQUESTS = 6
MIX = ("--prompt-tokens", "16", "--output-tokens", "16")


@pytest.fixture(scope="module")
def engines(vllm_python: Path, tiny_models: Path, e2e_logs: Path, e2e_record: dict) -> Iterator[dict[str, Any]]:
    """nospec and ngram, launched together and both waited for; stopped by PID on the way out."""
    t0 = time.monotonic()
    started: dict[str, Any] = {}
    try:
        for arm in ("nospec", "ngram"):
            started[arm] = vllm_live.start_arm(arm, tiny_models, python=vllm_python, log_dir=e2e_logs)
        for eng in started.values():
            eng.wait_ready(600)
        e2e_record["probe_instrument_startup"] = {"seconds": time.monotonic() - t0}
        yield started
    finally:
        for eng in started.values():
            eng.stop()


def _specgate(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(harness.SPECGATE), *argv], capture_output=True, text=True, timeout=timeout)


def _spec_config(tiny_models: Path) -> str:
    return json.dumps(vllm_live.speculative_config("ngram", tiny_models))


def _compare(base: Path, spec: Path) -> tuple[int, dict[str, Any], str]:
    r = _specgate("compare", str(base), str(spec), "--format", "json", timeout=60)
    assert r.returncode in (0, 1, 2), r.stderr
    t = _specgate("compare", str(base), str(spec), timeout=60)
    assert t.returncode == r.returncode, t.stderr
    return r.returncode, json.loads(r.stdout), t.stdout


def _poisson(rate: float, count: int, seed: int) -> list[float]:
    """vllm bench serve's arrivals as the issue asks for them: offset 0, then exponential gaps of mean 1/rate."""
    rng, t, out = random.Random(seed), 0.0, []
    for _ in range(count):
        out.append(t)
        t += rng.expovariate(rate)
    return out


def _not_client_bound(rec: ProbeRecord) -> None:
    assert rec.client_ceiling is not None and rec.client_ceiling.points, "the ceiling is measured at probe start"
    for c in rec.cells:
        ceiling = rec.client_ceiling.at(c.concurrency, c.request_rate)
        assert c.client_bound is False, (c.point, c.served_tokens_per_second, ceiling)
        assert c.served_tokens_per_second * 2 < ceiling, (c.point, c.served_tokens_per_second, ceiling)


def test_open_loop_records_seeded_arrivals_and_compare_goes_per_rate(engines: dict[str, Any], tiny_models: Path,
                                                                    tmp_path: Path, e2e_record: dict) -> None:
    outs = {"baseline": tmp_path / "base-rate.json", "speculative": tmp_path / "spec-rate.json"}
    t0 = time.monotonic()
    for arm, eng in (("baseline", engines["nospec"]), ("speculative", engines["ngram"])):
        extra = ["--speculative-config", _spec_config(tiny_models)] if arm == "speculative" else []
        r = _specgate("probe", "--engine-url", eng.url, "--arm", arm, *MIX, "--request-rate",
                      ",".join(f"{x:g}" for x in RATES), "--requests", str(RATE_REQUESTS), "--seed", str(SEED),
                      "--repetitions", "2", "--warmup", "1", "--out", str(outs[arm]), *extra)
        assert r.returncode == 0, r.stderr[-3000:]
    seconds = time.monotonic() - t0
    for arm, out in outs.items():
        rec = load_record(out)
        _not_client_bound(rec)
        assert sorted((c.request_rate, c.repetition) for c in rec.cells) == [(x, rep) for x in RATES for rep in (1, 2)]
        for c in rec.cells:
            assert c.request_rate is not None and c.arrival_offsets_seconds is not None, (arm, c.point)
            assert c.arrival_seed == SEED + c.repetition - 1, (arm, c.point, c.repetition)
            assert c.arrival_offsets_seconds == pytest.approx(_poisson(c.request_rate, RATE_REQUESTS, c.arrival_seed),
                                                              abs=1e-6), (arm, c.point, c.repetition)
            assert c.requests == RATE_REQUESTS and c.failed_requests == 0
            # the last request is sent at its offset and then streams 16 tokens: the cell cannot end earlier
            assert c.wall_seconds >= c.arrival_offsets_seconds[-1], (arm, c.point, c.wall_seconds)
    code, doc, text = _compare(outs["baseline"], outs["speculative"])
    rows = {c["request_rate"]: c for c in doc["cells"]}
    assert sorted(rows) == list(RATES), doc["cells"]
    for rate, row in rows.items():
        assert row["n_baseline"] == row["n_speculative"] == 2
        assert f"request rate {rate:g}/s" in row["reason"], row["reason"]
    (mix,) = doc["rate_crossovers"]
    if doc["crossover_request_rate"] is None:  # 2 vs 2 repetitions: p >= 1/6, no point is decisive
        assert code == 2 and all(row["verdict"] == "inconclusive" for row in rows.values()), doc["cells"]
        assert f"crossover ({mix}, open loop): none measured" in text, text
    else:
        lo, hi = doc["rate_crossovers"][mix]["between"]
        assert lo <= doc["crossover_request_rate"] <= hi
    e2e_record["probe_open_loop"] = {"seconds": seconds, "exit": code,
                                     **{f"speedup_{r:g}/s": row["speedup"] for r, row in rows.items()}}
    harness.log("open loop on real vLLM:\n" + text)


def test_probe_ab_writes_both_records_abba_and_compare_reports_the_pairing(engines: dict[str, Any],
                                                                            tiny_models: Path, tmp_path: Path,
                                                                            e2e_record: dict) -> None:
    base_out, spec_out = tmp_path / "ab-base.json", tmp_path / "ab-spec.json"
    t0 = time.monotonic()
    r = _specgate("probe", "ab", "--baseline-url", engines["nospec"].url, "--speculative-url", engines["ngram"].url,
                  "--speculative-config", _spec_config(tiny_models), *MIX, "--concurrency", "2", "--requests", "4",
                  "--repetitions", "3", "--warmup", "1", "--out-baseline", str(base_out),
                  "--out-speculative", str(spec_out))
    seconds = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-3000:]
    base, spec = load_record(base_out), load_record(spec_out)
    assert (base.arm, spec.arm) == ("baseline", "speculative")
    assert base.pairing is not None and spec.pairing is not None
    assert (base.pairing.order, base.pairing.partner) == ("ABBA", spec_out.name)
    assert (spec.pairing.order, spec.pairing.partner) == ("ABBA", base_out.name)
    _not_client_bound(base)
    _not_client_bound(spec)
    starts_b = {c.repetition: c.started_at for c in base.cells}
    starts_s = {c.repetition: c.started_at for c in spec.cells}
    assert sorted(starts_b) == sorted(starts_s) == [1, 2, 3]
    gaps = []
    for rep in (1, 2, 3):
        b, s = starts_b[rep], starts_s[rep]
        assert b is not None and s is not None
        assert (b < s) if rep % 2 == 1 else (s < b), (rep, b, s)  # A B | B A | A B
        gaps.append(abs(s - b))
    for cells in (base.cells, spec.cells):
        for c in cells:
            assert c.pair_apart_seconds == pytest.approx(gaps[c.repetition - 1], abs=2e-6), (c.repetition, gaps)
    code, doc, text = _compare(base_out, spec_out)
    pairing = doc["pairing"]
    assert pairing["order"] == "ABBA" and pairing["pairs"] == 3, pairing
    assert pairing["max_apart_seconds"] == pytest.approx(max(gaps), abs=2e-6)
    assert pairing["median_apart_seconds"] == pytest.approx(sorted(gaps)[1], abs=2e-6)
    (row,) = doc["cells"]
    assert row["pair_apart_seconds"] == pytest.approx(max(gaps), abs=2e-6)
    assert "pairing: ABBA by specgate probe ab" in text, text
    e2e_record["probe_ab"] = {"seconds": seconds, "exit": code, "speedup": row["speedup"],
                              "max_apart_seconds": pairing["max_apart_seconds"]}
    harness.log("probe ab on real vLLM:\n" + text)
