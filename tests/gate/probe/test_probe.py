"""`specgate probe` against a loopback engine replaying real vLLM streams (tests/gate/probe/probe_replay.py).

The replayed bytes are real vLLM 0.32.0 captures (tests/fixtures/probe/): one streamed completion
of 16 tokens per arm, the engine's `/tokenize`, `/version`, `/v1/models`, its HTTP 400 for a prompt
over max_model_len, and `/metrics` just before and after that request. The replay serves the
counters as before + k × (after − before) after k requests (probe_replay's docstring says why), so
a cell's expected acceptance is the captured request's own: L = 1 + Δaccepted / Δdrafts of the
capture, computed below from the capture itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gate.checks.acceptance.comparison import compare
from gate.cli import main
from gate.evidence.probes import ProbeRecord, load_record
from gate.probe.client import CompletionClient
from gate.probe.runner import quantiles
from gate.probe.workload import jsonl_mixes
from tests.gate.probe.probe_replay import ReplayEngine, load_capture

NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":1}'


def counter(page: str, name: str) -> float:
    m = re.search(rf'^vllm:{name}\{{engine="0",model_name="m"\}} (\S+)$', page, re.M)
    assert m, name
    return float(m.group(1))


def captured_length() -> tuple[float, float, float]:
    """(L, drafts, accepted) of the one captured ngram request, from its two /metrics pages."""
    cap = load_capture("ngram")
    d = counter(cap["metrics_after"], "spec_decode_num_drafts_total") - counter(
        cap["metrics_before"], "spec_decode_num_drafts_total")
    a = counter(cap["metrics_after"], "spec_decode_num_accepted_tokens_total") - counter(
        cap["metrics_before"], "spec_decode_num_accepted_tokens_total")
    return 1 + a / d, d, a


def probe(tmp_path: Path, url: str, *extra: str, arm: str = "speculative", ceiling: bool = False) -> tuple[int, Path]:
    """`specgate probe` on `url`; without the client ceiling unless `ceiling` (a null engine's start, ~0.3-1 s a
    probe: these tests are not about it; test_compare_vetting's control and test_instrument.py measure it)."""
    out = tmp_path / f"{arm}.json"
    args = ["probe", "--engine-url", url, "--arm", arm, "--out", str(out), *extra]
    if not ceiling:
        args.append("--no-client-ceiling")
    if arm == "speculative" and "--speculative-config" not in extra:
        args += ["--speculative-config", NGRAM]
    try:
        return main(args), out
    except SystemExit as e:  # argparse usage errors exit 3 through SystemExit
        return int(e.code or 0), out


def test_speculative_cells_attribute_acceptance_per_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    length, drafts, accepted = captured_length()
    cap = load_capture("ngram")
    with ReplayEngine("ngram") as eng:
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16",
                        "--concurrency", "1,2", "--repetitions", "2", "--requests", "2", "--warmup", "1")
    assert rc == 0, capsys.readouterr().err
    rec = load_record(out)
    assert (rec.arm, rec.engine, rec.engine_version, rec.model) == ("speculative", "vllm", "0.32.0", "m")
    assert rec.speculative == json.loads(NGRAM)
    assert rec.workload[0].prompts_from == "engine_tokenizer" and rec.workload[0].prompt_tokens == 8
    assert [(c.concurrency, c.repetition) for c in rec.cells] == [(1, 1), (2, 1), (1, 2), (2, 2)]
    per_request = json.loads([e[1] for e in cap["events"] if '"usage"' in e[1]][0][6:])[
        "metrics"]["speculative_decoding"]["mean_acceptance_length"]
    for c in rec.cells:
        assert c.requests == 2 and c.failed_requests == 0
        assert c.output_tokens == 32  # 2 requests x the capture's 16 completion tokens
        assert c.drafts == 2 * drafts and c.accepted_tokens == 2 * accepted  # this cell's alone, not the warm-up's
        assert c.acceptance_length == pytest.approx(length)
        assert c.per_request_acceptance_length == [per_request, per_request]
        assert c.served_tokens_per_second == pytest.approx(c.output_tokens / c.wall_seconds)
        # the replay keeps the capture's timing: a request lasts at least its last event's time
        assert c.wall_seconds >= cap["events"][-1][0] * (2 / c.concurrency) * 0.9
        assert c.ttft_seconds.p50 is not None and c.ttft_seconds.p50 >= cap["events"][0][0] * 0.9
        assert c.tpot_seconds.p50 is not None
    err = capsys.readouterr().err
    assert "warm-up: 1 request(s)" in err and "[4/4]" in err


def test_baseline_arm_and_compare_end_to_end(tmp_path: Path) -> None:
    with ReplayEngine("nospec") as eng:
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1",
                        "--repetitions", "3", "--requests", "1", "--warmup", "0", arm="baseline")
    assert rc == 0
    base = load_record(out)
    assert base.speculative is None
    assert all(c.acceptance_length is None and c.drafts is None for c in base.cells)
    # --no-client-ceiling: no ceiling recorded, so no cell is assessed (neither marked nor cleared)
    assert base.client_ceiling is None and all(c.client_bound is None for c in base.cells)
    with ReplayEngine("ngram") as eng:
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1",
                        "--repetitions", "3", "--requests", "1", "--warmup", "0")
    assert rc == 0
    c = compare(base, load_record(out))
    assert len(c.points) == 1 and c.points[0].n_baseline == 3
    assert c.points[0].verdict.value == "inconclusive"  # 3 vs 3 can never be significant at 0.05


@pytest.mark.parametrize("arm, capture, words", [
    ("baseline", "ngram", "reports speculative-decoding counters"),
    ("speculative", "nospec", "reports no speculative-decoding counters"),
])
def test_mislabelled_arm_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], arm: str, capture: str,
                                    words: str) -> None:
    with ReplayEngine(capture) as eng:
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1",
                        arm=arm)
    err = capsys.readouterr().err
    assert rc == 3 and words in err and err.count("\n") == 1
    assert not out.exists()


def test_engine_rejection_is_one_line_with_the_engines_message(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # 8 prompt + 600 output tokens > max_model_len 512: the replay answers with vLLM's real 400 body
    with ReplayEngine("ngram") as eng:
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "600", "--concurrency", "1")
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert rc == 3 and not out.exists()
    assert "every warm-up request failed: HTTP 400: This model's maximum context length is 512 tokens" in err


def test_stream_cut_before_done_counts_as_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ReplayEngine("ngram", cut_every=2) as eng:
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1",
                        "--repetitions", "1", "--requests", "2", "--warmup", "1")
    assert rc == 0, capsys.readouterr().err
    cell = load_record(out).cells[0]
    assert cell.failed_requests == 1 and cell.output_tokens == 16
    with ReplayEngine("ngram", cut_every=1) as eng:
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1")
    assert rc == 3 and "stream ended without [DONE]" in capsys.readouterr().err


def test_without_tokenize_prompts_are_words_and_say_so(tmp_path: Path) -> None:
    with ReplayEngine("nospec", no_tokenize=True) as eng:
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1",
                        "--repetitions", "1", "--requests", "1", "--warmup", "0", arm="baseline")
    assert rc == 0
    assert load_record(out).workload[0].prompts_from == "approximate_words"


def test_tokenizer_that_cannot_reach_the_length_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the replayed /tokenize always answers the captured 14 ids: a 20-token prompt cannot be built
    with ReplayEngine("nospec") as eng:
        rc, _ = probe(tmp_path, eng.url, "--prompt-tokens", "20", "--output-tokens", "16", "--concurrency", "1",
                      arm="baseline")
    assert rc == 3 and "returns 14 ids however long the text" in capsys.readouterr().err


def test_bounds_refuse_before_sending(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ReplayEngine("nospec") as eng:
        rc, _ = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1,8",
                      "--max-requests", "10", arm="baseline")
        assert rc == 3 and "more than --max-requests 10" in capsys.readouterr().err
        assert eng.state.completions_started == 0
        rc, _ = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1",
                      "--warmup", "0", "--time-limit", "0.000001", arm="baseline")
        assert rc == 3 and "time limit" in capsys.readouterr().err


def test_unreachable_engine_and_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _ = probe(tmp_path, "http://127.0.0.1:9", "--prompt-tokens", "8", "--output-tokens", "16",
                  "--concurrency", "1", arm="baseline")
    err = capsys.readouterr().err
    assert rc == 3 and err.count("\n") == 1 and "Traceback" not in err
    for extra in (["--prompt-tokens", "8", "--concurrency", "1"],  # no --output-tokens
                  ["--prompt-tokens", "8", "--output-tokens", "4", "--concurrency", "0"],
                  ["--output-tokens", "4", "--concurrency", "1"]):  # no mix source
        rc, _ = probe(tmp_path, "http://127.0.0.1:9", *extra, arm="baseline")
        assert rc == 3
    rc, _ = probe(tmp_path, "http://127.0.0.1:9", "--prompt-tokens", "8", "--output-tokens", "4",
                  "--concurrency", "1", "--speculative-config", "{", arm="speculative")
    assert rc == 3 and "not JSON" in capsys.readouterr().err


def test_jsonl_prompts(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "a b c", "mix": "chat", "max_tokens": 16}\n\n{"prompt": "d e", "mix": "chat", '
                 '"max_tokens": 16}\n{"prompt": "x", "mix": "code"}\n')
    mixes = jsonl_mixes(f, 8)
    assert [(m.name, len(m.prompts), m.output_tokens) for m in mixes] == [("chat", 2, 8), ("code", 1, 8)]
    with pytest.raises(ValueError, match="mix 'code' needs --output-tokens"):
        jsonl_mixes(f, None)
    f.write_text('{"prompt": "a"}\nnot json\n')
    with pytest.raises(ValueError, match=r"p.jsonl:2 is not valid JSON"):
        jsonl_mixes(f, 8)
    with ReplayEngine("nospec") as eng:
        f.write_text('{"prompt": "the quick brown fox"}\n')
        rc, out = probe(tmp_path, eng.url, "--prompts", str(f), "--output-tokens", "16", "--concurrency", "1",
                        "--repetitions", "1", "--requests", "1", "--warmup", "0", arm="baseline")
    assert rc == 0
    rec = load_record(out)
    assert rec.workload[0].prompts_from == "jsonl:p.jsonl"
    assert rec.cells[0].prompt_tokens == 14  # the engine's usage.prompt_tokens of the captured request


def test_plan_mix_at_its_own_concurrency(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("name: t\ntarget: {name: tiny}\nengine: {kind: vllm}\n"
                    "workload:\n  - {name: chat, concurrency: 2, prompt_tokens: 8, output_tokens: 16}\n")
    with ReplayEngine("nospec") as eng:
        rc, out = probe(tmp_path, eng.url, "--plan", str(plan), "--repetitions", "1", "--warmup", "0", arm="baseline")
    assert rc == 0
    rec = load_record(out)
    assert rec.workload[0].name == "chat" and rec.workload[0].concurrency == 2
    assert [c.concurrency for c in rec.cells] == [2]


def test_quantiles_interpolate_like_numpy() -> None:
    # numpy.quantile([1, 2, 3, 4], [0.5, 0.9, 0.99]) = 2.5, 3.7, 3.97
    q = quantiles([4.0, 1.0, 3.0, 2.0])
    assert (q.p50, q.p90, q.p99) == (pytest.approx(2.5), pytest.approx(3.7), pytest.approx(3.97))
    assert quantiles([]).p50 is None


def test_client_request_body_is_greedy_fixed_length() -> None:
    body = CompletionClient("http://x", "m").body([1, 2, 3], 16)
    # return_spec_tokens_details asks SGLang (0.5.23) for its per-request acceptance; vLLM allows extra fields
    assert body == {"model": "m", "prompt": [1, 2, 3], "max_tokens": 16, "temperature": 0.0, "ignore_eos": True,
                    "stream": True, "stream_options": {"include_usage": True}, "return_spec_tokens_details": True,
                    "return_token_ids": True}


def test_record_refuses_unknown_keys_and_non_finite(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ProbeRecord.model_validate({"arm": "baseline", "cells": [], "extra": 1})


def test_sampled_traffic_is_its_own_mix(tmp_path: Path) -> None:
    with ReplayEngine("nospec") as eng:
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1",
                        "--repetitions", "1", "--requests", "1", "--warmup", "0", "--temperature", "1",
                        arm="baseline")
    assert rc == 0
    mix = load_record(out).workload[0]
    assert (mix.name, mix.temperature) == ("p8-o16-t1", 1.0)
    assert CompletionClient("http://x", "m", temperature=0.7).body([1], 4)["temperature"] == 0.7


def test_append_numbers_repetitions_on_and_refuses_another_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1", "--repetitions", "1",
            "--requests", "1", "--warmup", "0"]
    with ReplayEngine("nospec") as eng:
        for _ in range(3):
            rc, out = probe(tmp_path, eng.url, *args, "--append", arm="baseline")
            assert rc == 0
    rec = load_record(out)
    assert [c.repetition for c in rec.cells] == [1, 2, 3] and rec.repetitions == 3
    with ReplayEngine("ngram") as eng:  # the same file, the other arm: refused, the file unchanged
        rc, _ = probe(tmp_path, eng.url, *args, "--append", arm="baseline")
    assert rc == 3
    (tmp_path / "speculative.json").write_text(out.read_text())
    with ReplayEngine("ngram") as eng:
        rc, _ = probe(tmp_path, eng.url, *args, "--append")
    assert rc == 3 and "existing record's arm is 'baseline'" in capsys.readouterr().err
    assert load_record(out).repetitions == 3
