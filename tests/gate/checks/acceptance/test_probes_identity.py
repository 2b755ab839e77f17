"""The acceptance line never passes on probe records that are not the plan's evidence (issue 21, "Wrong passes" 1):
each class of the reproduction, on other numbers, is inconclusive naming what is wrong; the clean pair of
tests/gate/checks/acceptance/test_probes.py (pays at concurrency 1, 5 vs 5, p = 1/252) still passes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from gate.plan.model import PlanError, plan_from_dict
from gate.status import Status
from tests.gate.checks.acceptance import judge
from tests.gate.checks.acceptance.test_comparison import BASE, FAST, now_iso, record
from tests.gate.checks.acceptance.test_probes import plan


def _files(tmp: Path, base_update: dict[str, Any] | None = None, spec_update: dict[str, Any] | None = None,
           spec_cells: dict[str, Any] | None = None, base_cells: dict[str, Any] | None = None) -> list[str]:
    base = record("baseline", {("chat", 1): BASE}).model_copy(update=base_update or {})
    spec = record("speculative", {("chat", 1): FAST}).model_copy(update=spec_update or {})
    if spec_cells:
        spec = spec.model_copy(update={"cells": [c.model_copy(update=spec_cells) for c in spec.cells]})
    if base_cells:
        base = base.model_copy(update={"cells": [c.model_copy(update=base_cells) for c in base.cells]})
    (tmp / "b.json").write_text(json.dumps(base.to_json()))
    (tmp / "s.json").write_text(json.dumps(spec.to_json()))
    return ["b.json", "s.json"]


def _probes_reason(r: Any) -> str:
    return next(p for p in r.reason.split("; ") if p.startswith("probes"))


def test_the_clean_pair_still_passes(tmp_path: Path) -> None:
    r = judge(plan(tmp_path, [("chat", 1)], _files(tmp_path)), "pre", [], [])
    assert r.status is Status.PASS, r.reason
    r = judge(plan(tmp_path, [("chat", 1)], _files(tmp_path)), "post", [], [])
    assert "probes: mix chat at concurrency 1: chat at concurrency 1 pays" in r.reason


def test_records_of_another_deployment_do_not_pass(tmp_path: Path) -> None:
    # model `tiny-chat` on SGLang with EAGLE3 at 6 draft tokens, against a vLLM `org/Big-7B` ngram k = 3 plan
    sg = {"engine": "sglang", "engine_version": "0.5.23", "model": "tiny-chat"}
    files = _files(tmp_path, sg, {**sg, "speculative": {"algorithm": "EAGLE3", "num_draft_tokens": 6}})
    r = judge(plan(tmp_path, [("chat", 1)], files, target={"name": "org/Big-7B"}), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert "probes not judged: the baseline record is a sglang engine, the plan deploys vllm" in r.reason


@pytest.mark.parametrize("update, field", [
    ({"engine": None}, "engine is unknown"), ({"model": None}, "model is unknown"),
    ({"speculative": {"method": None, "num_speculative_tokens": None}}, "speculative.method is unknown"),
    ({"speculative": {"method": "ngram"}}, "depth is unknown (speculative.num_speculative_tokens not recorded)"),
    ({"created_at": None}, "created_at is unknown (null)"),
])
def test_unknown_is_not_the_same(tmp_path: Path, update: dict[str, Any], field: str) -> None:
    r = judge(plan(tmp_path, [("chat", 1)], _files(tmp_path, spec_update=update)), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert field in _probes_reason(r)


def test_a_plan_version_the_records_do_not_show(tmp_path: Path) -> None:
    p = plan(tmp_path, [("chat", 1)], _files(tmp_path, {"engine_version": None}, {"engine_version": None}),
             engine={"version": "0.32.0"})
    r = judge(p, "pre", [], [])
    assert r.status is Status.INCONCLUSIVE and "engine_version is unknown (null)" in r.reason
    p = plan(tmp_path, [("chat", 1)], _files(tmp_path), engine={"version": "0.31.1"})
    r = judge(p, "pre", [], [])
    assert r.status is Status.INCONCLUSIVE and "ran vllm 0.32.0, the plan runs vllm 0.31.1" in r.reason


def test_a_plan_of_no_version_has_no_known_rejection_default(tmp_path: Path) -> None:
    # issue 37 item 2: the records run vLLM 0.32.0's default 'standard'; a plan of no engine.version has no known
    # default, and unknown is never the same (issue 34), so the clean pair is no evidence for it
    p = plan(tmp_path, [("chat", 1)], _files(tmp_path), engine={"version": None})
    r = judge(p, "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert ("not the same deployment: not comparable: the plan states no engine.version, so its rejection default "
            "is unknown: declare engine.version (or the rejection mode); the other side runs 'standard'") in r.reason
    # stating the mode instead is enough: compared with the record's assumed default
    p = plan(tmp_path, [("chat", 1)], _files(tmp_path), engine={
        "version": None, "speculative": {"method": "ngram", "num_speculative_tokens": 3,
                                         "rejection_sample_method": "standard"}})
    assert judge(p, "pre", [], []).status is Status.PASS


def test_a_same_named_mix_of_another_shape_does_not_judge_the_plans_mix(tmp_path: Path) -> None:
    # the plan's chat is 256/1,024 tokens; the probes' chat 256/512
    r = judge(plan(tmp_path, [("chat", 1)], _files(tmp_path), shape=(256, 1024)), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert ("probe mix chat is 256 prompt / 512 output tokens, the plan's mix 256 prompt / 1024 output tokens: "
            "other requests") in r.reason
    # of other prompts too (4,096/1,024): another context band (issue 39), named as such
    r = judge(plan(tmp_path, [("chat", 1)], _files(tmp_path), shape=(4096, 1024)), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert ("mix chat serves 4096-token prompts, the probes measured 256: evidence from another context band is not "
            "this mix's evidence") in r.reason


def test_a_probe_mix_of_unknown_prompt_length_matches_no_plan_mix(tmp_path: Path) -> None:
    own = {"prompt_tokens": None, "prompts_from": "jsonl:prompts.jsonl"}
    base = record("baseline", {("chat", 1): BASE})
    spec = record("speculative", {("chat", 1): FAST})
    upd = {"workload": [base.workload[0].model_copy(update=own)]}
    (tmp_path / "b.json").write_text(json.dumps(base.model_copy(update=upd).to_json()))
    (tmp_path / "s.json").write_text(json.dumps(spec.model_copy(update=upd).to_json()))
    r = judge(plan(tmp_path, [("chat", 1)], ["b.json", "s.json"]), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE and "its prompt tokens are unknown" in r.reason


def test_three_against_three_copied_twice_is_not_significant(tmp_path: Path) -> None:
    # 3 vs 3 (p = 0.05, not < 0.05) with every cell copied twice would read as 9 vs 9, p < 0.001
    base = record("baseline", {("chat", 1): BASE[:3]})
    spec = record("speculative", {("chat", 1): FAST[:3]})
    for rec, name in ((base, "b.json"), (spec, "s.json")):
        doc = rec.to_json()
        doc["cells"] = doc["cells"] * 3
        (tmp_path / name).write_text(json.dumps(doc))
    r = judge(plan(tmp_path, [("chat", 1)], ["b.json", "s.json"]), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert "holds cell 'chat' at concurrency 1, repetition 1 3 times" in r.reason


@pytest.mark.parametrize("spec_cells, base_cells, words", [
    ({"acceptance_length": None}, None, "the speculative record measured no speculation"),
    (None, {"acceptance_length": 1.6}, "a baseline cell carries speculative acceptance"),
    ({"served_tokens_per_second": 99.0}, None, "is not output_tokens / wall_seconds"),
    ({"output_tokens": 9000, "wall_seconds": 300.0, "served_tokens_per_second": 30.0}, None,
     "9000 output tokens for 8 completed requests = 1125 per request, not the mix's 512"),
    (None, {"output_tokens": 4000, "wall_seconds": 1e-7, "served_tokens_per_second": 4e10},
     "above the sane bound 1e+07"),
    ({"acceptance_length": 7.5}, None, "acceptance length 7.5 > 1 + k = 4"),
    ({"per_request_acceptance_length": [2.0, 2.2, 250.0]}, None, "acceptance length 250 > 1 + k = 4"),
])
def test_cells_inconsistent_with_themselves_or_their_arm(tmp_path: Path, spec_cells: dict | None,
                                                        base_cells: dict | None, words: str) -> None:
    files = _files(tmp_path, spec_cells=spec_cells, base_cells=base_cells)
    r = judge(plan(tmp_path, [("chat", 1)], files), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE, r.reason
    assert words in _probes_reason(r)


@pytest.mark.parametrize("base_at, spec_at, words", [
    ("2020-03-01T00:00:00+00:00", now_iso(), "lies before 2024-01-01"),
    (now_iso(), "2098-05-01T00:00:00+00:00", "after now"),
    ("yesterday-ish", now_iso(), "'yesterday-ish' is not an ISO 8601 date"),
    (now_iso(-2 * 86400), now_iso(), "measured 48.0 h apart"),
], ids=["before-2024", "future", "not-a-date", "two-days-apart"])  # ids without the clock: pytest-xdist's workers
# must collect the same names
def test_dates_that_are_not_one_recent_experiment(tmp_path: Path, base_at: str, spec_at: str, words: str) -> None:
    files = _files(tmp_path, {"created_at": base_at}, {"created_at": spec_at})
    r = judge(plan(tmp_path, [("chat", 1)], files), "pre", [], [])
    assert r.status is Status.INCONCLUSIVE and words in r.reason, r.reason


def test_a_post_pass_needs_records_of_the_last_day(tmp_path: Path) -> None:
    old = {"created_at": now_iso(-40 * 3600)}
    files = _files(tmp_path, old, old)
    assert judge(plan(tmp_path, [("chat", 1)], files), "pre", [], []).status is Status.PASS
    r = judge(plan(tmp_path, [("chat", 1)], files), "post", [], [])
    assert "probes not judged: the baseline record was measured 40.0 h before this evaluation" in r.reason
    assert r.status is not Status.PASS


@pytest.mark.parametrize("alpha", [0.9, 0.21, 1.0, 0.0, -0.05])
def test_slo_alpha_outside_0_to_0_2_is_refused(tmp_path: Path, alpha: float) -> None:
    with pytest.raises(PlanError, match="slo.alpha"):
        plan_from_dict({"name": "p", "target": {"name": "m"}, "engine": {"kind": "vllm"}, "slo": {"alpha": alpha}})
    assert plan_from_dict({"name": "p", "target": {"name": "m"}, "engine": {"kind": "vllm"},
                           "slo": {"alpha": 0.2}}).slo.alpha == 0.2


def test_every_case_answers_fast(tmp_path: Path) -> None:
    t0 = time.monotonic()
    for _ in range(5):
        judge(plan(tmp_path, [("chat", 1)], _files(tmp_path, spec_cells={"acceptance_length": 9.0})), "pre", [], [])
    assert time.monotonic() - t0 < 5
