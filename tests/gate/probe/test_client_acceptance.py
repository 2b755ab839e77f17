"""The probe's per-request L comes from the validated parser (gate.probe.per_request), for both engines.

What is real: vLLM's streamed usage chunk (tests/fixtures/probe/vllm-0.32.0-stream-ngram.json, replayed by
probe_replay.ReplayEngine) and SGLang's sglext + usage chunks (tests/fixtures/probe/sglang-0.5.23-sglext-chunks.json:
serialized by SGLang 0.5.23's own `serving_completions` classes — CompletionStreamResponse, SglExt,
spec_tokens_details_from_meta_info — from the real `/generate` meta_info of tests/fixtures/sglang/0.5.23/, so the
field names and types are the engine's; the recipe is below). What is edited: a broken number in a real chunk, to
show that the probe records "unknown" with the parser's reason, never a made-up L.

Recipe of the SGLang fixture (run once with SGLang 0.5.23 installed; the arm's meta_info `m`):
    details = spec_tokens_details_from_meta_info(m)
    CompletionStreamResponse(id=m["id"], created=0, object="text_completion", choices=[], model="tiny",
                             sglext=SglExt(spec_tokens_details=details)).model_dump_json()
    CompletionStreamResponse(..., usage=UsageInfo(prompt_tokens=..., completion_tokens=...,
                             total_tokens=...)).model_dump_json(exclude_none=True)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exporter.engines.base import PerRequestError
from exporter.engines.sglang.stream import sglang_request_acceptance
from gate.cli import main
from gate.evidence.probes import load_record
from gate.probe.client import CompletionClient
from gate.probe.per_request import streamed_acceptance
from tests.gate.probe.probe_replay import ReplayEngine

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "probe"
NGRAM = '{"method":"ngram","num_speculative_tokens":3}'


def sglang_streams(arm: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / "sglang-0.5.23-sglext-chunks.json").read_text())["arms"][arm]


def _chunks(stream: dict[str, Any]) -> tuple[dict[str, Any] | None, Any]:
    """(usage chunk, sglext.spec_tokens_details) of one recorded stream, as the client collects them."""
    usage, details = None, None
    for line in stream["events"]:
        event = json.loads(line[len("data: "):])
        if isinstance(event.get("sglext"), dict):
            details = event["sglext"]["spec_tokens_details"]
        if isinstance(event.get("usage"), dict):
            usage = event
    return usage, details


@pytest.mark.parametrize("arm", ["ngram", "eagle3", "standalone"])
def test_sglang_stream_gives_the_meta_infos_own_numbers(arm: str) -> None:
    for stream in sglang_streams(arm):
        usage, details = _chunks(stream)
        got = streamed_acceptance(usage, details, stream["completion_tokens"])
        want = sglang_request_acceptance({**stream["meta_info_spec"], "completion_tokens": stream["completion_tokens"]})
        assert got is not None and got == want
        # decode-only L (vLLM's definition): the prefill token out of SGLang's completion_tokens / spec_verify_ct
        spec = stream["meta_info_spec"]
        assert got.acceptance_length == (stream["completion_tokens"] - 1) / spec["spec_verify_ct"]
        assert spec["spec_accept_length"] == pytest.approx(stream["completion_tokens"] / spec["spec_verify_ct"])


def test_sglang_without_speculation_sends_no_details() -> None:
    for stream in sglang_streams("nospec"):
        usage, details = _chunks(stream)
        assert details is None and streamed_acceptance(usage, details, stream["completion_tokens"]) is None


def test_a_stream_with_both_shapes_is_refused() -> None:
    usage, details = _chunks(sglang_streams("ngram")[0])
    assert usage is not None
    with pytest.raises(PerRequestError, match="both"):
        streamed_acceptance({**usage, "metrics": {"speculative_decoding": {}}}, details, 32)
    with pytest.raises(PerRequestError, match="not an object"):
        streamed_acceptance(usage, [details], 32)  # n > 1 lists: the probe sends n = 1


def _usage_index(events: list[list[Any]]) -> int:
    return next(i for i, (_, line) in enumerate(events) if '"usage"' in line)


def _edited(events: list[list[Any]], edit: Any) -> list[list[Any]]:
    """The capture's events with the usage chunk's JSON passed through `edit`."""
    out = [list(e) for e in events]
    i = _usage_index(out)
    doc = json.loads(out[i][1][len("data: "):])
    edit(doc)
    out[i][1] = "data: " + json.dumps(doc)
    return out


def test_client_reads_sglangs_chunks_through_the_parser() -> None:
    """The replayed stream's usage chunk swapped for SGLang's sglext + usage chunks (its text chunks stay vLLM's:
    the client reads only their arrival)."""
    stream = sglang_streams("ngram")[0]
    with ReplayEngine("ngram") as eng:
        events = eng.state.capture["events"]
        i = _usage_index(events)
        at = events[i][0]
        eng.state.capture["events"] = events[:i] + [[at, line] for line in stream["events"]] + events[i + 1:]
        r = CompletionClient(eng.url, "m").complete([1, 2, 3], 32)  # SGLang's usage says 32 tokens: ask for 32
    assert r.ok and r.completion_tokens == 32 and r.acceptance_refused is None
    assert stream["meta_info_spec"]["spec_accept_length"] == 1.6  # SGLang's 32 / 20, the prefill token counted
    assert r.acceptance_length == (32 - 1) / 20  # decode-only: 1.55


def test_client_reads_vllms_usage_chunk_through_the_parser() -> None:
    with ReplayEngine("ngram") as eng:
        r = CompletionClient(eng.url, "m").complete([1, 2, 3], 16)
    assert r.ok and r.acceptance_length == 2.5 and r.acceptance_refused is None  # 1 + 6 accepted / 4 steps


@pytest.mark.parametrize("edit, reason", [
    (lambda d: d["metrics"]["speculative_decoding"].update(mean_acceptance_length=9.0), "mean_acceptance_length 9.0"),
    (lambda d: d["metrics"]["speculative_decoding"].update(acceptance_histogram=[0, 3, 0]), "bins"),
    (lambda d: d["metrics"].update(speculative_decoding="2.5"), "not an object"),
])
def test_refused_numbers_are_unknown_with_the_reason(edit: Any, reason: str) -> None:
    with ReplayEngine("ngram") as eng:
        eng.state.capture["events"] = _edited(eng.state.capture["events"], edit)
        r = CompletionClient(eng.url, "m").complete([1, 2, 3], 16)
    assert r.ok and r.completion_tokens == 16  # the request itself served: only its L is unknown
    assert r.acceptance_length is None and r.acceptance_refused is not None and reason in r.acceptance_refused


def test_a_cell_with_a_refused_request_records_no_per_request_L_and_counts_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "spec.json"
    with ReplayEngine("ngram") as eng:
        eng.state.capture["events"] = _edited(
            eng.state.capture["events"], lambda d: d["metrics"]["speculative_decoding"].update(num_spec_steps=5))
        rc = main(["probe", "--engine-url", eng.url, "--arm", "speculative", "--out", str(out),
                   "--speculative-config", NGRAM, "--prompt-tokens", "8", "--output-tokens", "16",
                   "--concurrency", "1", "--repetitions", "1", "--requests", "2", "--warmup", "0",
                   "--no-client-ceiling"])
    err = capsys.readouterr().err
    assert rc == 0, err
    cell = load_record(out).cells[0]
    assert cell.per_request_acceptance_length is None  # unknown, not a guess
    assert cell.acceptance_length == pytest.approx(2.5)  # the cell's own L from /metrics stays
    assert "per-request acceptance of 2 of 2 request(s) was refused" in err
    assert "acceptance_histogram sums to 4, not num_spec_steps 5 (x2)" in err
