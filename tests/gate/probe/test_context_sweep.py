"""`specgate probe --prompt-tokens A,B,C` (issue 39): each length its own mix and cells, the engine's counters
attributed to each cell alone, and the engine's own step time on every cell.

Against the loopback replay of a real vLLM 0.32.0 ngram stream (tests/gate/probe/probe_replay.py): its `/metrics`
counters — inter-token latency included — grow by the captured request's increments per completed request, so a
cell of n requests must show n times the capture's drafts and accepted tokens and the capture's own mean step.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gate.evidence.probes import load_record
from tests.gate.probe.probe_replay import ReplayEngine, load_capture
from tests.gate.probe.test_probe import captured_length, probe


def _sample(page: str, name: str) -> float:
    m = re.search(rf'^vllm:{name}\{{engine="0",model_name="m"\}} (\S+)$', page, re.M)
    assert m, name
    return float(m.group(1))


def test_three_lengths_are_three_mixes_with_their_own_counters(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    _, drafts, accepted = captured_length()
    cap = load_capture("ngram")
    steps = (_sample(cap["metrics_after"], "inter_token_latency_seconds_count")
             - _sample(cap["metrics_before"], "inter_token_latency_seconds_count"))
    step_time = (_sample(cap["metrics_after"], "inter_token_latency_seconds_sum")
                 - _sample(cap["metrics_before"], "inter_token_latency_seconds_sum")) / steps
    with ReplayEngine("ngram") as eng:
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "4,8,12", "--output-tokens", "16",
                        "--concurrency", "1", "--repetitions", "2", "--requests", "2", "--warmup", "0")
    assert rc == 0, capsys.readouterr().err
    rec = load_record(out)
    assert [(m.name, m.prompt_tokens) for m in rec.workload] == [("p4-o16", 4), ("p8-o16", 8), ("p12-o16", 12)]
    assert [(c.mix, c.repetition) for c in rec.cells] == [(m, r) for r in (1, 2) for m in ("p4-o16", "p8-o16",
                                                                                             "p12-o16")]
    for c in rec.cells:
        assert c.drafts == 2 * drafts and c.accepted_tokens == 2 * accepted
        assert c.engine_step_seconds == pytest.approx(step_time)
        assert c.engine_steps == 2 * steps
    # attribution is exact: the cells' deltas add up to the engine's whole change (no warm-up here)
    assert sum(c.drafts or 0 for c in rec.cells) == len(rec.cells) * 2 * drafts
    assert "engine step" in capsys.readouterr().err


def test_prompt_token_lists_refuse_what_is_not_a_length(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("0,8", "8,x", ""):
        rc, _ = probe(tmp_path, "http://127.0.0.1:9", "--prompt-tokens", bad, "--output-tokens", "4",
                      "--concurrency", "1")
        assert rc == 3, bad
        assert "prompt lengths" in capsys.readouterr().err
