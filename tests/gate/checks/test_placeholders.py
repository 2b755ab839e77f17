"""No pass with placeholders (issue 36 item 3), on DeepSeek-V3's real config.json written by `specgate init`.

The issue's plan: `init --engine vllm --method mtp` on DeepSeek-V3, the workload, the acceptance target and the step
costs filled (costs sourced "guess"), the KV budget set, seven `null  # TODO` lines left, tensor parallel 1 for a
671B model: it passed (exit 0). Now the lines that read a key init left empty are inconclusive naming it, and a
geometry whose weights per rank exceed the GPU is a kv_pool fail with both numbers. Weights: DeepSeek-V3's model
card gives 671B total parameters in FP8 (1 B each); an H200 reports 143,771 MiB = 150,754,820,096 B.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from gate.checks.base import hold_placeholders, placeholders_of
from gate.cli import main
from gate.plan.model import load_plan, plan_from_dict
from gate.status import LineResult, Status
from gate.verdict.evaluate import evaluate
from tests.gate.helpers import CONFIGS, tiny_plan

DEEPSEEK = CONFIGS / "target-mla-mtp__deepseek-ai__DeepSeek-V3.json"
H200_BYTES = 150_754_820_096
WEIGHTS = ("    parameters: 671000000000\n    dtype: fp8\n"
           "    source: \"DeepSeek-V3 model card: 671B total parameters, FP8\"")


def _run(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(args)
    return code, out.getvalue()


def _init(tmp_path: Path, engine: str = "vllm") -> str:
    out = tmp_path / "plan.yaml"
    code, text = _run(["init", "--target", str(DEEPSEEK), "--engine", engine, "--method", "mtp", "--out", str(out)])
    assert code == 0, text
    return out.read_text(encoding="utf-8")


def _set(text: str, line_start: str, value: str) -> str:
    """Replace the value of the one line starting `line_start` (its TODO comment goes with it)."""
    lines = [i for i, ln in enumerate(text.splitlines()) if ln.startswith(line_start)]
    assert len(lines) == 1, (line_start, lines)
    rows = text.splitlines()
    rows[lines[0]] = value
    return "\n".join(rows) + "\n"


def _issue_plan(tmp_path: Path, engine: str = "vllm") -> str:
    """The issue's plan: workload, target, "guess" costs and the KV budget filled; TP 1; the other TODOs left."""
    text = _init(tmp_path, engine)
    text = _set(text, "workload: []", 'workload:\n  - {name: chat, concurrency: 8, prompt_tokens: 2048, '
                                      'output_tokens: 512, source: "guess"}')
    text = _set(text, "  target_acceptance_length:", "  target_acceptance_length: 1.8")
    text = _set(text, "  target_source:", '  target_source: "assumed: guess"')
    text = _set(text, "costs: []", 'costs:\n  - {point: 2K, target_step_ms: 20, verify_cycle_ms: 24, source: "guess"}')
    return _set(text, "  kv_cache_memory_bytes:", "  kv_cache_memory_bytes: 40000000000")


def _check(tmp_path: Path, text: str) -> tuple[int, str]:
    path = tmp_path / "filled.yaml"
    path.write_text(text, encoding="utf-8")
    return _run(["check", "--plan", str(path), "--format", "json"])


def test_the_issues_plan_with_seven_todo_lines_left_is_not_a_pass(tmp_path: Path) -> None:
    text = _issue_plan(tmp_path)
    assert len(re.findall(r": null  # TODO", text)) == 7 and "  tp: 1\n" in text
    path = tmp_path / "filled.yaml"
    path.write_text(text, encoding="utf-8")
    code, out = _run(["check", "--plan", str(path)])
    assert code == 2 and "decision: INCONCLUSIVE (exit 2)" in out, out
    v = evaluate(load_plan(path))
    kv = v.checks["kv_pool"]
    assert kv.status is Status.INCONCLUSIVE
    # the pool itself fits (the line passed before): the placeholders alone hold it, each named
    assert kv.reason.startswith("all 1 request mix(es) fit"), kv.reason
    assert kv.values["placeholders"] == ["target.weights.path", "engine.block_size", "engine.memory_fraction",
                                         "engine.context_cap_tokens", "budgets.gpu_memory_bytes"]
    assert "placeholders `specgate init` left: target.weights.path, engine.block_size" in kv.reason
    assert v.checks["artifacts"].status is Status.INCONCLUSIVE  # was n/a with weights and storage budget empty
    # the MTP head is no second artifact: init asks no startup budget (issue 36 b), so n/a is no empty placeholder
    assert v.checks["staging"].status is Status.NA and "budgets.startup_seconds" not in load_plan(path).placeholders
    assert v.checks["acceptance"].status is Status.PASS  # its keys are filled: not held
    assert "placeholders" not in v.checks["codesign"].values  # revisions, version: run-record facts


def test_tp_1_for_671b_weights_on_an_h200_is_a_kv_pool_fail_with_the_numbers(tmp_path: Path) -> None:
    text = _issue_plan(tmp_path)
    text = _set(text, "    path: null", WEIGHTS)
    text = _set(text, "  gpu_memory_bytes:", f"  gpu_memory_bytes: {H200_BYTES}")
    code, out = _check(tmp_path, text)
    assert code == 1, out
    v = evaluate(load_plan(tmp_path / "filled.yaml"))
    kv = v.checks["kv_pool"]
    assert kv.status is Status.FAIL
    assert kv.reason.startswith("this geometry cannot serve the model: weights per rank 671,000,000,000 B (target "
                                "671,000,000,000 B / TP 1) > 150,754,820,096 B of GPU memory"), kv.reason


def test_weights_over_the_gpu_fail_even_when_the_memory_fraction_is_unknown(tmp_path: Path) -> None:
    """SGLang has no default fraction: the bill alone is undecided, yet 671 GB on one 141 GB GPU cannot serve."""
    text = _issue_plan(tmp_path, engine="sglang")
    text = _set(text, "    path: null", WEIGHTS)
    text = _set(text, "  gpu_memory_bytes:", f"  gpu_memory_bytes: {H200_BYTES}")
    text = text.replace("  - engine.memory_fraction\n", "")  # not held by the placeholder: the rule alone decides
    path = tmp_path / "filled.yaml"
    path.write_text(text, encoding="utf-8")
    kv = evaluate(load_plan(path)).checks["kv_pool"]
    assert kv.values["gpu_memory"]["unknown"] == ["memory fraction"] and not kv.values["gpu_memory"]["over"]
    assert kv.status is Status.FAIL and "cannot serve the model" in kv.reason, kv.reason
    # eight ranks: 83,875,000,000 B each fit the GPU, and the undecided fraction is inconclusive again
    path.write_text(text.replace("  tp: 1\n", "  tp: 8\n"), encoding="utf-8")
    kv8 = evaluate(load_plan(path)).checks["kv_pool"]
    assert kv8.status is Status.INCONCLUSIVE and "cannot serve" not in kv8.reason, kv8.reason


def test_filled_todos_and_tp_8_on_h200s_lose_the_placeholder_reason(tmp_path: Path) -> None:
    text = _issue_plan(tmp_path)
    for start, value in [
        ("description:", "description: DeepSeek-V3 with its MTP head on 8 x H200"),
        ("  revision:", '  revision: "86518964eaef84e3fdd98e9861759a1384f9c29d"'),
        ("    path: null", WEIGHTS),
        ("  version:", '  version: "0.32.0"'),
        ("  tp: 1", "  tp: 8"),
        ("  block_size:", "  block_size: 16"),
        ("  memory_fraction:", "  memory_fraction: 0.9"),
        ("  context_cap_tokens:", "  context_cap_tokens: 32768"),
        ("  storage_bytes:", "  storage_bytes: 800000000000"),
        ("  gpu_memory_bytes:", f"  gpu_memory_bytes: {H200_BYTES}"),
        ("  # startup_seconds:", "  startup_seconds: 900"),  # init's commented key (no second artifact: optional)
    ]:
        text = _set(text, start, value)
    assert ": null  # TODO" not in text
    code, out = _check(tmp_path, text)
    assert "placeholder" not in out, out
    plan = load_plan(tmp_path / "filled.yaml")
    assert plan.placeholders and plan.open_placeholders == ()  # the list stays; every key in it is filled
    v = evaluate(plan)
    assert v.checks["kv_pool"].status is Status.PASS, v.checks["kv_pool"].reason
    assert v.checks["acceptance"].status is Status.PASS
    # what still holds it is evidence, not placeholders: the cold start is not measured yet
    assert v.checks["staging"].status is Status.INCONCLUSIVE and "not measured" in v.checks["staging"].reason
    assert code == 2


def test_a_key_deleted_from_the_list_says_empty_is_meant(tmp_path: Path) -> None:
    text = _issue_plan(tmp_path)
    for key in ("target.weights.path", "engine.block_size", "engine.memory_fraction", "engine.context_cap_tokens",
                "budgets.gpu_memory_bytes"):
        text = text.replace(f"  - {key}\n", "")
    path = tmp_path / "filled.yaml"
    path.write_text(text, encoding="utf-8")
    v = evaluate(load_plan(path))
    assert v.checks["kv_pool"].status is Status.PASS and "placeholder" not in v.checks["kv_pool"].reason


def test_a_mistyped_placeholder_key_is_invalid_input(tmp_path: Path) -> None:
    text = _init(tmp_path) + "  - engine.blok_size\n"
    path = tmp_path / "typo.yaml"
    path.write_text(text, encoding="utf-8")
    code, out = _run(["check", "--plan", str(path)])
    assert code == 3 and "placeholders: not a plan key: engine.blok_size" in out, out


def test_weights_given_as_bytes_close_the_path_placeholder_and_a_removed_drafter_its_keys() -> None:
    data = tiny_plan(placeholders=["target.weights.path", "drafter.weights.path", "drafter.revision",
                                   "engine.block_size"])
    data["target"]["weights"] = {"bytes": 1706496}
    data["drafter"]["weights"] = {"path": None}
    data["drafter"]["revision"] = None
    data["engine"]["block_size"] = None
    plan = plan_from_dict(data)
    assert plan.open_placeholders == ("drafter.weights.path", "drafter.revision", "engine.block_size")
    assert placeholders_of(plan, "kv_pool") == ("drafter.weights.path", "engine.block_size")
    assert placeholders_of(plan, "codesign") == ()  # a revision is the run record's, no line's
    ngram = tiny_plan("ngram", placeholders=["drafter.weights.path", "drafter.revision"])
    assert plan_from_dict(ngram).open_placeholders == ()  # the drafter section is gone: nothing to fill


def test_the_hold_keeps_a_fail_and_turns_pass_warn_and_na_inconclusive() -> None:
    plan = plan_from_dict(tiny_plan(placeholders=["budgets.startup_seconds"], budgets={"storage_bytes": 10_000_000}))
    assert plan.budgets.startup_seconds is None
    for before, after in [(Status.PASS, Status.INCONCLUSIVE), (Status.WARN, Status.INCONCLUSIVE),
                          (Status.NA, Status.INCONCLUSIVE), (Status.INCONCLUSIVE, Status.INCONCLUSIVE),
                          (Status.FAIL, Status.FAIL)]:
        held = hold_placeholders("staging", plan, LineResult(before, "r", {"x": 1}))
        assert held.status is after and held.values == {"x": 1, "placeholders": ["budgets.startup_seconds"]}
        assert held.reason.startswith("r; placeholder `specgate init` left: budgets.startup_seconds (fill it")
    untouched = LineResult(Status.PASS, "r")
    assert hold_placeholders("kv_pool", plan, untouched) is untouched  # the key is not this line's
    assert plan_from_dict(tiny_plan()).open_placeholders == ()  # a plan without the list (every older one)
