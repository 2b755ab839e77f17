"""exporter.engines.sglang.stream: SGLang's per-request acceptance from `/generate` `meta_info`.

The answers are real: recorded from SGLang 0.5.23 on CPU by tools/refresh_sglang_captures.py
(tests/fixtures/sglang/0.5.23/<arm>/requests.json); the broken ones are edits of a real one.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from exporter.engines.base import PerRequestError
from exporter.engines.sglang.stream import sglang_request_acceptance

FIXTURES = Path(__file__).parents[3] / "fixtures" / "sglang" / "0.5.23"

# One real NGRAM answer's meta_info (4 draft tokens per verify): 32 tokens in 15 verify calls.
REAL_NGRAM = {"completion_tokens": 32, "prompt_tokens": 5, "spec_accept_rate": 0.37777777777777777,
              "spec_accept_length": 2.1333333333333333, "spec_num_correct_drafts": 17,
              "spec_num_proposed_drafts": 45, "spec_verify_ct": 15, "spec_correct_drafts_histogram": [5, 6, 1, 3]}


def test_real_ngram_answer():
    r = sglang_request_acceptance(REAL_NGRAM)
    assert r is not None
    assert r.verify_calls == 15 and r.completion_tokens == 32
    assert REAL_NGRAM["spec_accept_length"] == pytest.approx(32 / 15)  # SGLang's own: the prefill token counted
    assert r.acceptance_length == pytest.approx((32 - 1) / 15)  # decode-only, vLLM's definition
    assert r.acceptance_rate == pytest.approx(17 / 45) == pytest.approx(REAL_NGRAM["spec_accept_rate"])
    assert r.correct_drafts_histogram == (5, 6, 1, 3)


def test_no_speculation_is_none():
    assert sglang_request_acceptance({"completion_tokens": 32, "prompt_tokens": 5}) is None


@pytest.mark.parametrize("change, msg", [
    ({"spec_verify_ct": 0}, "is 0"),
    ({"spec_verify_ct": "15"}, "spec_verify_ct"),
    ({"spec_accept_length": float("nan")}, "finite"),
    ({"spec_accept_length": 3.0}, "completion_tokens / spec_verify_ct"),
    ({"spec_correct_drafts_histogram": [5, 6, 1]}, "sums to 12"),
    ({"spec_num_correct_drafts": 18}, "accounts for 17 correct drafts, not 18"),
    ({"completion_tokens": -1}, "completion_tokens"),
    # 15 verify calls yield at least 15 tokens after the prefill one, at most 15 + 17 correct drafts
    ({"completion_tokens": 15, "spec_accept_length": 1.0}, "at least one token after the prefill"),
    ({"completion_tokens": 34, "spec_accept_length": 34 / 15}, "more than 15 verify calls \\+ 17 correct drafts"),
])
def test_inconsistent_answers_are_refused(change, msg):
    meta = {**copy.deepcopy(REAL_NGRAM), **change}
    with pytest.raises(PerRequestError, match=msg):
        sglang_request_acceptance(meta)


def test_not_an_object():
    with pytest.raises(PerRequestError, match="not an object"):
        sglang_request_acceptance([1, 2])  # type: ignore[arg-type]


@pytest.mark.parametrize("arm", ["ngram", "standalone", "eagle3"])
def test_every_recorded_answer_parses_and_adds_up(arm):
    path = FIXTURES / arm / "requests.json"
    assert path.is_file(), f"{path} missing: record it with tools/refresh_sglang_captures.py"
    doc = json.loads(path.read_text())
    parsed = [sglang_request_acceptance(r["meta_info"]) for r in doc["responses"]]
    assert parsed and all(p is not None for p in parsed)
    c = doc["counters"]
    assert sum(p.verify_calls for p in parsed) == c["after"]["verify_calls"] - c["before"]["verify_calls"]
    assert sum(p.completion_tokens for p in parsed) == \
        c["after"]["generation_tokens"] - c["before"]["generation_tokens"]


ADAPTIVE = Path(__file__).parents[3] / "fixtures" / "sglang" / "0.5.23" / "adaptive-generate-meta.json"


def test_a_drafter_accepting_nothing_reads_one_decode_only():
    """The real adaptive EAGLE3 answer (random head): SGLang says 48 / 47 = 1.021, decode-only L is 1.000."""
    meta = json.loads(ADAPTIVE.read_text())["answer"]["meta_info"]
    assert meta["spec_accept_length"] == pytest.approx(48 / 47)
    r = sglang_request_acceptance(meta)
    assert r is not None and r.verify_calls == 47 and r.correct_drafts == 0
    assert r.acceptance_length == 1.0
