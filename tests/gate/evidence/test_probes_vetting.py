"""Probe records vetted as evidence (gate/evidence/probe_vetting.py): each case is a class of defect (issue 21,
"Wrong passes" 1), shown on numbers other than the reproduction's; the clean record has none.

The records are tests/gate/checks/acceptance/test_comparison.py's complete builders (vLLM 0.32.0, model `m`, ngram k = 3,
mix `chat` 256/512 from the engine's tokenizer, dated now, L 2.0 per speculative cell).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from gate.evidence.probe_vetting import pair_defects, plan_defects, record_defects, record_depth
from gate.evidence.probes import MixSpec, ProbeRecord
from gate.plan.model import plan_from_dict
from tests.gate.checks.acceptance.test_comparison import BASE, FAST, TOKENS, now_iso, record


def _base() -> ProbeRecord:
    return record("baseline", {("chat", 1): BASE})


def _spec(**kw: Any) -> ProbeRecord:
    return record("speculative", {("chat", 1): FAST}, **kw)


def _cells(rec: ProbeRecord, **update: Any) -> ProbeRecord:
    return rec.model_copy(update={"cells": [c.model_copy(update=update) for c in rec.cells]})


def _plan(**engine: Any) -> Any:
    spec = engine.pop("speculative", {"method": "ngram", "num_speculative_tokens": 3})
    return plan_from_dict({"name": "p", "target": {"name": engine.pop("target", "m")},
                           "engine": {"kind": "vllm", "speculative": spec, **engine},
                           "workload": [{"name": "chat", "concurrency": 1, "prompt_tokens": 256,
                                         "output_tokens": TOKENS}]})


def test_clean_records_have_no_defects() -> None:
    base, spec = _base(), _spec()
    assert record_defects(base) == [] and record_defects(spec) == []
    assert pair_defects(base, spec, time.time()) == []
    assert plan_defects(_plan(), base, spec, "pre", time.time()) == []
    assert plan_defects(_plan(version="0.32"), base, spec, "post", time.time()) == []  # a version prefix is the same


# --- each record on its own ---------------------------------------------------------------------------------

def test_a_copied_cell_is_refused_naming_it() -> None:
    spec = _spec()
    copied = spec.model_copy(update={"cells": [*spec.cells, *spec.cells[1:3]]})
    (first,) = [d for d in record_defects(copied) if "copied" in d]
    assert "cell 'chat' at concurrency 1, repetition 2 2 times (2 repeated cell(s))" in first


@pytest.mark.parametrize("rate_factor", [1.02, 0.95, 3.0])
def test_a_rate_that_is_not_tokens_over_wall(rate_factor: float) -> None:
    spec = _spec()
    bad = spec.model_copy(update={"cells": [spec.cells[0].model_copy(update={
        "served_tokens_per_second": spec.cells[0].served_tokens_per_second * rate_factor}), *spec.cells[1:]]})
    (d,) = record_defects(bad)
    assert "is not output_tokens / wall_seconds" in d and "within 1%" in d


def test_rounding_within_one_percent_is_not_a_defect() -> None:
    spec = _spec()
    c = spec.cells[0]
    ok = spec.model_copy(update={"cells": [c.model_copy(update={
        "served_tokens_per_second": c.served_tokens_per_second * 1.004}), *spec.cells[1:]]})
    assert record_defects(ok) == []


def test_more_output_than_requests_times_the_mix() -> None:
    # 8 requests x 512 = 4,096 tokens at most; 4,097 in 1 s
    bad = _cells(_spec(), output_tokens=4097, wall_seconds=1.0, served_tokens_per_second=4097.0)
    d = record_defects(bad)[0]  # (every cell made identical: also one measurement counted more than once)
    assert "4097 output tokens for 8 completed requests = 512.125 per request, not the mix's 512" in d


def test_an_impossible_rate_is_refused() -> None:
    # consistent with itself (tokens / wall) but 4e9 tokens/s: above the sane bound 1e7
    bad = _cells(_base(), output_tokens=4000, wall_seconds=1e-6, served_tokens_per_second=4e9)
    d = record_defects(bad)[0]  # (every cell made identical: also one measurement counted more than once)
    assert "served_tokens_per_second 4e+09 is above the sane bound 1e+07" in d


@pytest.mark.parametrize("update, words", [
    ({"acceptance_length": 5.5}, "acceptance length 5.5 > 1 + k = 4"),
    ({"per_request_acceptance_length": [2.0, 40.0]}, "acceptance length 40 > 1 + k = 4"),
    ({"acceptance_length": 3.0, "drafts": 100.0, "accepted_tokens": 150.0}, "is not 1 + accepted / drafts = 2.5"),
    ({"accepted_tokens": 90.0, "draft_tokens": 60.0}, "90 accepted of 60 draft tokens"),
    ({"per_request_acceptance_length": [2.0] * 9}, "9 per-request acceptance lengths for 8 completed requests"),
])
def test_acceptance_beyond_what_depth_k_allows(update: dict[str, Any], words: str) -> None:
    assert any(words in d for d in record_defects(_cells(_spec(), **update))), record_defects(
        _cells(_spec(), **update))


def test_unknown_depth_bounds_l_by_the_largest_depth() -> None:
    spec = _spec().model_copy(update={"speculative": {"method": "ngram"}})
    assert record_depth(spec) == (None, None)
    assert record_defects(_cells(spec, acceptance_length=30.0)) == []
    (d,) = record_defects(_cells(spec, acceptance_length=70.0))
    assert "k unknown: bounded by 64" in d


def test_acceptance_exactly_on_the_speculative_arm() -> None:
    none = _spec(length=None)
    assert record_defects(none) == ["not applicable: the speculative record measured no speculation: no cell has an "
                                    "acceptance length"]
    for field, value in (("acceptance_length", 1.8), ("drafts", 10.0), ("per_request_acceptance_length", [1.5])):
        (d,) = record_defects(_cells(_base(), **{field: value}))
        assert "a baseline cell carries speculative acceptance" in d
    (d,) = record_defects(_base().model_copy(update={"speculative": {"method": "eagle3"}}))
    assert "baseline record carries speculative settings" in d
    assert "names no speculative settings" in record_defects(_spec().model_copy(update={"speculative": None}))[0]


def test_cells_of_an_undescribed_mix_and_a_mix_described_twice() -> None:
    no_mix = _spec().model_copy(update={"workload": []})
    assert any("cells of mix 'chat' have no workload entry" in d for d in record_defects(no_mix))
    mix = _spec().workload[0]
    twice = _spec().model_copy(update={"workload": [mix, mix]})
    assert any("describes mix 'chat' more than once" in d for d in record_defects(twice))


@pytest.mark.parametrize("value", [0, -3, 2.5, "3", True, 65])
def test_a_depth_key_that_is_no_depth(value: Any) -> None:
    spec = _spec().model_copy(update={"speculative": {"method": "ngram", "num_speculative_tokens": value}})
    assert any("speculative.num_speculative_tokens" in d for d in record_defects(spec))


# --- the two arms -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["engine", "engine_version", "model"])
def test_unknown_is_not_the_same_between_the_arms(field: str) -> None:
    (d,) = pair_defects(_base().model_copy(update={field: None}), _spec(), time.time())
    assert f"the baseline record's {field} is unknown (null)" in d
    (d,) = pair_defects(_base(), _spec().model_copy(update={field: None}), time.time())
    assert f"the speculative record's {field} is unknown (null)" in d


@pytest.mark.parametrize("change", [{"prompt_tokens": 128}, {"output_tokens": 64}, {"temperature": 0.7},
                                    {"prompts_from": "approximate_words"}, {"prompt_tokens": None}])
def test_a_mix_of_another_shape_in_the_other_arm(change: dict[str, Any]) -> None:
    spec = _spec()
    other = spec.model_copy(update={"workload": [spec.workload[0].model_copy(update=change)]})
    assert any("mix 'chat' differs between the arms" in d for d in pair_defects(_base(), other, time.time()))


@pytest.mark.parametrize("created, words", [
    (None, "created_at is unknown (null)"),
    ("last tuesday", "'last tuesday' is not an ISO 8601 date"),
    ("2026-01-01T10:00:00", "has no time zone"),
    ("2021-06-01T00:00:00+00:00", "lies before 2024-01-01"),
    ("2097-03-01T00:00:00+00:00", "after now"),
])
def test_a_date_that_is_no_date_of_evidence(created: str | None, words: str) -> None:
    ds = pair_defects(_base(), _spec().model_copy(update={"created_at": created}), time.time())
    assert len(ds) == 1 and words in ds[0], ds


def test_arms_measured_more_than_a_day_apart() -> None:
    ds = pair_defects(_base().model_copy(update={"created_at": now_iso(-3 * 86400)}), _spec(), time.time())
    assert len(ds) == 1 and "measured 72.0 h apart" in ds[0] and "more than 24 h" in ds[0]
    # an hour apart, a minute inside the clock skew: one experiment
    assert pair_defects(_base().model_copy(update={"created_at": now_iso(-3600)}),
                        _spec().model_copy(update={"created_at": now_iso(30)}), time.time()) == []


# --- the arms against the plan ------------------------------------------------------------------------------

def test_another_deployment_is_named_field_by_field() -> None:
    # records of served model `tiny` on SGLang 0.5.23, suffix-like EAGLE3 at depth 6, against the vLLM plan
    sg = dict(engine="sglang", engine_version="0.5.23", model="tiny")
    base = _base().model_copy(update=sg)
    spec = _spec().model_copy(update={**sg, "speculative": {"algorithm": "EAGLE3", "num_draft_tokens": 7}})
    ds = plan_defects(_plan(target="Qwen/Qwen3-4B", version="0.32.0"), base, spec, "pre", time.time())
    assert any("ran sglang 0.5.23, the plan runs vllm 0.32.0" in d for d in ds)
    assert any("is a sglang engine, the plan deploys vllm" in d for d in ds)
    assert any("runs EAGLE3, the plan deploys ngram" in d for d in ds)
    assert any("drafts k = 6, the plan declares k = 3" in d for d in ds)


def test_served_model_name_and_its_last_path_component() -> None:
    assert plan_defects(_plan(target="org/m"), _base(), _spec(), "pre", time.time()) == []
    ds = plan_defects(_plan(target="Qwen/Qwen3-4B"), _base(), _spec(), "pre", time.time())
    assert ds and "serves m, not the plan's Qwen/Qwen3-4B" in ds[0]
    assert plan_defects(_plan(target="Qwen/Qwen3-4B", served_model_name="m"), _base(), _spec(), "pre", time.time()) == []


@pytest.mark.parametrize("field, words", [
    ("engine", "engine is unknown (null)"), ("model", "model is unknown (null)"),
    ("engine_version", "engine_version is unknown (null); the plan runs vllm 0.32.0"),
])
def test_a_field_the_plan_needs_left_null(field: str, words: str) -> None:
    ds = plan_defects(_plan(version="0.32.0"), _base(), _spec().model_copy(update={field: None}), "pre", time.time())
    assert any(words in d for d in ds), ds


def test_method_and_depth_unknown_are_not_the_plans() -> None:
    unknown = _spec().model_copy(update={"speculative": {"method": None, "num_speculative_tokens": None}})
    ds = plan_defects(_plan(), _base(), unknown, "pre", time.time())
    assert any("speculative.method is unknown" in d for d in ds)
    assert any("depth is unknown (speculative.num_speculative_tokens not recorded)" in d for d in ds)
    other = _spec().model_copy(update={"speculative": {"method": "suffix", "num_speculative_tokens": 5}})
    ds = plan_defects(_plan(), _base(), other, "pre", time.time())
    assert ds == ["the speculative record runs suffix, the plan deploys ngram (engine.speculative.method)",
                  "the speculative record drafts k = 5, the plan declares k = 3 "
                  "(engine.speculative.num_speculative_tokens)"]


def test_the_engines_own_spelling_of_method_and_depth() -> None:
    # SGLang: algorithm EAGLE3, k = num_draft_tokens - 1; nextn is vLLM's mtp
    sg = {"engine": "sglang", "engine_version": "0.5.23"}
    plan = plan_from_dict({"name": "p", "target": {"name": "m"}, "drafter": {"name": "d"},
                           "engine": {"kind": "sglang", "speculative": {"method": "eagle3", "num_steps": 3,
                                                                        "num_draft_tokens": 4, "eagle_topk": 1}}})
    spec = _spec().model_copy(update={**sg, "speculative": {"speculative_algorithm": "EAGLE3",
                                                            "speculative_num_draft_tokens": 4}})
    assert plan_defects(plan, _base().model_copy(update=sg), spec, "pre", time.time()) == []
    mtp = _plan(speculative={"method": "nextn", "num_speculative_tokens": 2})
    spec = _spec().model_copy(update={"speculative": {"method": "mtp", "num_speculative_tokens": 2}})
    assert plan_defects(mtp, _base(), spec, "pre", time.time()) == []


def test_a_plan_without_speculation_is_not_judged_by_a_speculative_record() -> None:
    plan = plan_from_dict({"name": "p", "target": {"name": "m"}, "engine": {"kind": "vllm"}})
    ds = plan_defects(plan, _base(), _spec(), "pre", time.time())
    assert ds == ["the plan deploys no speculative decoding, the speculative record runs ngram"]


def test_post_needs_records_of_the_last_day() -> None:
    old = {"created_at": now_iso(-30 * 3600)}
    base, spec = _base().model_copy(update=old), _spec().model_copy(update=old)
    assert plan_defects(_plan(), base, spec, "pre", time.time()) == []  # history is pre-rollout evidence
    ds = plan_defects(_plan(), base, spec, "post", time.time())
    assert len(ds) == 2 and "measured 30.0 h before this evaluation" in ds[0] and "more than 24 h" in ds[0]


def test_a_probe_mix_spec_is_unchanged_input() -> None:
    # the reader's shape is today's: a mix with the user's own prompts has no prompt_tokens
    m = MixSpec(name="own", output_tokens=64, prompts_from="jsonl:prompts.jsonl")
    assert m.prompt_tokens is None and m.temperature == 0.0
