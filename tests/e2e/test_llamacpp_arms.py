"""llama.cpp (llama-server b11434, built by tools/llamacpp_cpu.sh) through the exporter and the gate, on CPU.

One module, parametrized by arm, one server per arm (llamacpp_live.LLAMACPP through harness.arm_fixture):
nospec, draft (a separate random draft), draftself (the target as its own draft: greedy, every draft
accepted) and ngram (`ngram-simple`, prompt lookup). What each test checks and where its expected number
comes from is said in it:
- the exporter's L in its 30 s window = 1 + Δaccepted / Δdrafts of llama-server's own page around the
  traffic (the raw counters, read by llamacpp_live.LlamacppCounters, not by the adapter);
- the pool = the prediction: `--ctx-size` cells (gate profile `predict_pool`) = /props n_ctx per slot x
  slots = what the server logged at start (`n_slots`, `n_ctx_slot`, `kv_unified = 'false'`);
- `specgate probe` runs against the server's /v1/completions and /tokenize;
- a plan judged pre and post;
- the engine SIGKILLed while `specgate check` waits for its window: inconclusive.
Budget: at most 8 minutes once built (each arm: a few seconds to start, one 30 s window).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from harness import SPECGATE, LiveArm, arm_fixture, ensure_models, log, run_check, sample_value, write_plan
from llamacpp_live import (
    CTX_SIZE,
    DRAFT_N_MAX,
    LLAMACPP,
    LLAMACPP_BUILD,
    PARALLEL,
    acceptance_between,
    ensure_gguf,
    ensure_llamacpp,
)

from gate.inputs.configs import load_config
from gate.model.engines import profile
from gate.model.geometry import kv_geometry

SPEC_ARMS = ("draft", "draftself", "ngram")


@pytest.fixture(scope="session")
def llamacpp_server() -> Path:
    """llama-server, built once into the cache (tools/llamacpp_cpu.sh)."""
    return ensure_llamacpp()


@pytest.fixture(scope="session")
def llamacpp_models(vllm_python: Path) -> Path:
    """The tiny target and draft (tools/build_tiny_models.py) as GGUF (tools/tiny_gguf.py)."""
    return ensure_gguf(vllm_python, ensure_models(vllm_python))


live = arm_fixture(LLAMACPP, ("nospec", *SPEC_ARMS))


def only(*arms: str) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("live", arms, indirect=True)


def hf(models: Path, name: str) -> Path:
    return models.parent / name / "config.json"


@only(*SPEC_ARMS)
def test_exporter_L_is_the_engine_counters(live: LiveArm) -> None:
    t = live.traffic
    assert t is not None
    acc = acceptance_between(t.before, t.after)
    assert acc is not None and acc["drafts"] > 0, "the arm drafted nothing"
    got = sample_value(live.reading, "specgate_spec_acceptance_length", window=LLAMACPP.window_label)
    assert got == pytest.approx(acc["L"], rel=1e-9), (got, acc)
    # per position: rounds that accepted position i over rounds; k positions (--spec-draft-n-max)
    assert len(t.after.accepted_per_position) == DRAFT_N_MAX


@only("draftself")
def test_draftself_accepts_every_draft(live: LiveArm) -> None:
    t = live.traffic
    assert t is not None
    acc = acceptance_between(t.before, t.after)
    assert acc is not None and acc["rate"] == 1.0  # greedy self-draft: the target agrees with itself
    assert acc["L"] == 1 + acc["draft_tokens"] / acc["drafts"] <= 1 + DRAFT_N_MAX


@only("nospec", "draftself")
def test_pool_is_the_prediction(live: LiveArm, llamacpp_models: Path) -> None:
    # gate profile: llama.cpp allocates --ctx-size cells whatever the memory, with or without the drafter
    target = kv_geometry(load_config(hf(llamacpp_models, "target")))  # 2 layers x 2 KV heads x 32 x 4 B x 2
    draft = kv_geometry(load_config(hf(llamacpp_models, "draft")))
    pred = profile("llamacpp").predict_pool(kv_cache_memory_bytes=1 << 30, target_bytes_per_token=target.bytes_per_token,
                                            draft_charge=draft.attention_bytes_per_token, has_drafter=live.arm != "nospec",
                                            block_size=None, configured_max_total_tokens=CTX_SIZE)
    assert pred.with_drafter == CTX_SIZE
    assert sample_value(live.reading, "specgate_kv_pool_tokens", pool="target") == float(CTX_SIZE)
    t = live.traffic
    assert t is not None and t.after.pool_tokens == CTX_SIZE  # /props: n_ctx per slot x total_slots
    props = live.engine.props()
    assert (props["default_generation_settings"]["n_ctx"], props["total_slots"]) == (CTX_SIZE // PARALLEL, PARALLEL)
    # the server's own start-up line: the cells split over explicit slots, not one unified cache
    assert live.engine.slots_logged() == (PARALLEL, CTX_SIZE // PARALLEL, "false")
    log(f"llama.cpp {live.arm}: pool {CTX_SIZE} = {PARALLEL} x {CTX_SIZE // PARALLEL}; target "
        f"{target.bytes_per_token} B/token x {CTX_SIZE} = {CTX_SIZE * target.bytes_per_token:,} B of KV")


@only("draftself")
def test_specgate_probe_runs_against_llama_server(live: LiveArm, tmp_path: Path) -> None:
    out = tmp_path / "probe.json"
    r = subprocess.run([str(SPECGATE), "probe", "--engine-url", live.engine.url, "--arm", "speculative",
                        "--out", str(out), "--prompt-tokens", "16", "--output-tokens", "16", "--concurrency", "1",
                        "--repetitions", "1"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rec = json.loads(out.read_text())
    assert rec["arm"] == "speculative" and rec["engine"] == "llamacpp", rec
    (cell,) = rec["cells"]
    assert cell["failed_requests"] == 0 and cell["output_tokens"] > 0, cell


def plan(live: LiveArm, models: Path, tmp: Path, target_l: float) -> Path:
    """A plan for the arm as llamacpp_live launches it (engine kind llamacpp, --ctx-size as the pool)."""
    doc: dict[str, Any] = {
        "name": f"e2e-llamacpp-{live.arm}",
        "target": {"name": "tiny-target", "config": str(hf(models, "target"))},
        # llama-server's own keys (--ctx-size, --parallel): llama.cpp sizes its cache by cells, not memory
        "engine": {"kind": "llamacpp", "version": LLAMACPP_BUILD, "kv_dtype": "float32",
                   "ctx_size": CTX_SIZE, "parallel": PARALLEL, "context_cap_tokens": CTX_SIZE // PARALLEL,
                   "served_model_name": "tiny",
                   "speculative": {"method": "draft_model", "num_speculative_tokens": DRAFT_N_MAX}},
        "drafter": {"name": "tiny-target-as-draft", "config": str(hf(models, "target")), "kv_scope": "full"},
        "workload": [{"name": "e2e-traffic", "concurrency": 4, "prompt_tokens": 32, "output_tokens": 64,
                      "source": "tests/e2e: bounded completions (llamacpp_live)"}],
        "slo": {"target_acceptance_length": target_l, "target_source": "assumed: tests/e2e, the arm's bar",
                "window_seconds": 5.0, "required_fraction": 0.5, "min_drafts": 1, "min_windows": 1},
        "costs": [{"verify_cycle_ms": 12.0, "target_step_ms": 10.0, "source": "tests/e2e: declared (L* 1.2)"}],
    }
    return write_plan(tmp / "plan.yaml", doc)


@only("draftself")
def test_plan_judged_pre_and_post(live: LiveArm, llamacpp_models: Path, tmp_path: Path) -> None:
    p = plan(live, llamacpp_models, tmp_path, target_l=1.5)
    row: dict[str, Any] = {}
    pre = run_check(p, "pre", None, row)
    assert pre["checks"]["kv_pool"]["status"] == "pass", pre["checks"]["kv_pool"]  # 2,048 cells hold 4 x 96
    post = run_check(p, "post", f"{live.exporter.url}/metrics", row)
    assert post["checks"]["acceptance"]["status"] == "pass", post["checks"]["acceptance"]  # L near 4 >= 1.5
    log(f"llama.cpp plan: pre {pre['decision']}, post {post['decision']} {row}")


@only("draftself")
def test_engine_killed_mid_check_is_inconclusive(live: LiveArm, llamacpp_models: Path, tmp_path: Path) -> None:
    """Runs last on its arm (it kills the server): `check --phase post` on the engine's own page waits for
    its window; the engine is SIGKILLed under it."""
    p = plan(live, llamacpp_models, tmp_path, target_l=1.5)
    proc = subprocess.Popen([str(SPECGATE), "check", "--plan", str(p), "--phase", "post", "--metrics",
                             live.engine.url + "/metrics", "--format", "json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    waiting = threading.Event()
    err: list[str] = []

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append(line)
            if "waiting" in line:
                waiting.set()

    threading.Thread(target=read_err, daemon=True).start()
    try:
        assert waiting.wait(60), "".join(err)
        threading.Thread(target=lambda: _quiet_traffic(live), daemon=True).start()
        time.sleep(1.0)
        live.engine.kill_hard()
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    doc = json.loads(out)
    assert (proc.returncode, doc["decision"]) == (2, "inconclusive"), doc


def _quiet_traffic(live: LiveArm) -> None:
    try:
        live.engine.send_traffic(4, 64, concurrency=4)
    except Exception:  # noqa: BLE001  # the engine is killed under it
        pass
