"""EAGLE-3's co-design rules on its taps before a rollout, and the real vLLM (CPU) crash they prevent.

The served arm `eagle3` (the random head of tools/build_tiny_models.py, seed 4, tapping
eagle_aux_hidden_state_layer_ids [0, 1] of the 2-layer target) is measured and judged with the
other arms in test_vllm_arms.py.

Co-design: `specgate codesign` passes the served head against its target and fails the two bad
heads built beside it — taps [0, 3] (out of range: vLLM's ids run over [0, L] = [0, 2]) and [1, 1]
(duplicates: vLLM captures each layer once, and the real engine then crashes on the traffic with a
reshape error — the last test here shows it);
`specgate check --phase pre` on a plan with the duplicate head fails on the co-design line.
"""

from __future__ import annotations

import time

import harness
import requests
from harness import specgate_json, write_plan
from vllm_live import PER_REQUEST_METRICS_ARGS, start_arm
from vllm_plans import plan_dict


def _codesign(models, head: str):
    return specgate_json("codesign", str(models / "target" / "config.json"), str(models / head / "config.json"),
                         "--engine", "vllm", "--num-speculative-tokens", "3")


def _finding(doc: dict, check: str) -> dict:
    return next(f for f in doc["findings"] if f["check"] == check)


def test_codesign_passes_the_served_head_against_its_target(tiny_models):
    res = _codesign(tiny_models, "eagle3")
    assert res.code == 0 and res.doc["status"] == "pass", res.doc
    assert _finding(res.doc, "eagle3_taps")["status"] == "pass"
    assert _finding(res.doc, "eagle3_tap_duplicates")["status"] == "pass"


def test_codesign_fails_an_out_of_range_tap(tiny_models):
    res = _codesign(tiny_models, "eagle3-taps-out-of-range")
    assert res.code == 1 and res.doc["status"] == "fail", res.doc
    f = _finding(res.doc, "eagle3_taps")
    assert f["status"] == "fail" and "[3]" in f["detail"], f


def test_codesign_fails_duplicate_tap_ids(tiny_models):
    res = _codesign(tiny_models, "eagle3-taps-duplicate")
    assert res.code == 1 and res.doc["status"] == "fail", res.doc
    f = _finding(res.doc, "eagle3_tap_duplicates")
    assert f["status"] == "fail" and "repeat [1]" in f["detail"], f
    assert _finding(res.doc, "eagle3_taps")["status"] == "pass"  # in range: only the new rule catches it


def test_check_pre_fails_a_rollout_of_the_duplicate_tap_head(tiny_models, tmp_path, e2e_record):
    plan = write_plan(tmp_path / "plan-eagle3-dup.yaml", plan_dict("eagle3", tiny_models,
                                                                  drafter_dir="eagle3-taps-duplicate"))
    res = specgate_json("check", "--plan", str(plan), "--phase", "pre")
    assert res.code == 1 and res.doc["decision"] == "fail", res.stderr
    line = res.doc["checks"]["codesign"]
    assert line["status"] == "fail" and "eagle3_tap_duplicates" in line["reason"], line
    e2e_record.setdefault("eagle3-taps-duplicate", {}).update(gate_pre_decision=res.doc["decision"],
                                                              gate_pre_codesign=line["status"])


def _drive_until_a_request_fails(eng: harness.EngineProcess) -> bool:
    """The measured traffic first; if its batches all happened to hold an even token count (a quiet
    machine batches differently), lone prompts of 1..9 words, whose prefills cannot all be even."""
    try:
        eng.send_traffic(8, 64, concurrency=4)
    except requests.RequestException:
        return True
    for words in range(1, 10):
        try:
            eng.complete(" ".join(["the"] * words), max_tokens=8, timeout=60)
        except requests.RequestException:
            return True
    return False


def test_vllm_itself_crashes_on_the_duplicate_tap_head(vllm_python, tiny_models, e2e_logs, e2e_record):
    """What the co-design rule prevents, on the real engine.

    The duplicate-tap head on a server of its own (no other vLLM is up in this module). vLLM
    captures layer 1 once for taps [1, 1] and reshapes the 128-wide states to the fc's [-1, 256]:
    an even token count passes silently (a lone request is served, drafting from pairs of tokens),
    the measured traffic's batches hit an odd count and the engine dies (`shape '[-1, 256]' is invalid for input of size ...`).
    """
    eng = start_arm("eagle3-taps-duplicate", tiny_models, python=vllm_python, log_dir=e2e_logs,
                    extra_args=PER_REQUEST_METRICS_ARGS)
    try:
        eng.wait_ready(240)
        assert _drive_until_a_request_fails(eng), "every request was served by the duplicate-tap head"
        deadline = time.monotonic() + 30
        while eng.alive() and time.monotonic() < deadline:
            time.sleep(0.5)
        died = not eng.alive()
    finally:
        eng.stop()
    log = eng.log_path.read_text(errors="replace")
    assert "shape '[-1, 256]' is invalid for input of size" in log, log[-3000:]
    assert died, "the engine survived its worker's failure"
    e2e_record.setdefault("eagle3-taps-duplicate", {}).update(engine_crashed_on_traffic=True)
