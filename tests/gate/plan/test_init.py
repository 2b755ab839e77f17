"""`specgate init` on the real configs of tests/fixtures/configs: a plan that loads, the family
the gate detects, a depth the co-design line accepts, the user's decisions left as TODO.

Why: the newcomer's path is init -> reference -> check. A written plan that does not load, or
that passes on placeholders, would teach the wrong thing; so every plan here is loaded and
checked, and no check of a freshly written plan is a pass (no acceptance target: fail).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from gate.cli import main
from gate.plan.init import choose_depth
from gate.plan.model import load_plan
from gate.verdict.evaluate import evaluate
from tests.gate.helpers import CONFIGS

QWEN = CONFIGS / "target-gqa__Qwen__Qwen3-8B.json"
LLAMA = CONFIGS / "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json"

CASES = {
    # name: (args, method, detected family, speculative keys, codesign status)
    "eagle3-vllm": (["--target", str(LLAMA), "--drafter",
                     str(CONFIGS / "eagle3-speculators__nm-testing__EAGLE3-LLaMA3.1-Instruct-8B-converted.json"),
                     "--engine", "vllm"], "eagle3", {"num_speculative_tokens": 5}),
    "dflash-sglang": (["--target", str(QWEN), "--drafter", str(CONFIGS / "dflash__specforge__qwen3-8b-dflash.json"),
                       "--engine", "sglang", "--method", "dflash"], "dflash", {"num_draft_tokens": 16}),
    "dspark-sglang": (["--target", str(QWEN), "--drafter", str(CONFIGS / "dspark__specforge__qwen3-8b-dspark.json"),
                       "--engine", "sglang", "--method", "dspark"], "dspark", {"num_draft_tokens": 8}),
    "draft-vllm": (["--target", str(CONFIGS / "tiny-target.json"), "--drafter", str(CONFIGS / "tiny-draft.json"),
                    "--engine", "vllm", "--method", "draft_model"], "draft_model", {"num_speculative_tokens": 3}),
    "mtp-sglang": (["--target", str(CONFIGS / "target-mla-mtp__deepseek-ai__DeepSeek-V3.json"), "--engine", "sglang",
                    "--method", "mtp"], "mtp", {"num_steps": 1, "eagle_topk": 1, "num_draft_tokens": 2}),
    "ngram-vllm": (["--target", str(CONFIGS / "tiny-target.json"), "--engine", "vllm", "--method", "ngram"],
                   "ngram", {"num_speculative_tokens": 3}),
}


def _init(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["init", *args])
    return code, err.getvalue()


@pytest.mark.parametrize("name", sorted(CASES))
def test_init_writes_a_plan_that_loads_and_checks(name: str, tmp_path: Path) -> None:
    args, method, spec = CASES[name]
    out = tmp_path / "sub" / f"{name}.yaml"
    out.parent.mkdir()
    code, err = _init([*args, "--out", str(out)])
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=")
    assert "TODO" in text and "target_source: null  # TODO" in text
    plan = load_plan(out)
    assert plan.method == method
    assert plan.engine.speculative is not None
    assert {k: v for k, v in plan.engine.speculative.model_dump().items() if v is not None and k != "method"} == spec
    assert plan.target.config is not None and plan.target.config.resolve() == Path(args[1]).resolve()
    v = evaluate(plan)
    assert v.checks["acceptance"].status.value == "fail"  # no target yet: seed 002's rule, never a pass
    assert v.checks["codesign"].status.value in ("pass", "warn", "n/a"), v.checks["codesign"].reason
    assert v.decision.value == "fail" and v.exit_code == 1


def test_init_to_stdout_and_the_family_is_detected_without_method() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["init", "--target", str(QWEN), "--drafter", str(CONFIGS / "dspark__specforge__qwen3-8b-dspark.json"),
                     "--engine", "sglang"]) == 0
    assert "# detected family: dspark" in out.getvalue() and "method: dspark" in out.getvalue()


@pytest.mark.parametrize("args,msg", [
    (["--target", str(CONFIGS / "tiny-target.json"), "--drafter", str(CONFIGS / "tiny-draft.json"),
      "--engine", "vllm", "--method", "eagle3"], "is a draft_model drafter, but engine.speculative.method is eagle3"),
    (["--target", str(CONFIGS / "tiny-target.json"), "--engine", "vllm"], "no drafter family"),
    (["--target", str(CONFIGS / "tiny-target.json"), "--drafter", str(CONFIGS / "tiny-draft.json"), "--engine",
      "vllm", "--method", "ngram"], "has no drafter"),
    (["--target", "/nonexistent/config.json", "--engine", "vllm", "--method", "ngram"], "target config"),
    (["--target", str(QWEN), "--engine", "tgi"], "invalid choice"),
])
def test_init_bad_input_is_one_line_exit_3(args: list[str], msg: str) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(["init", *args])
        except SystemExit as e:  # argparse's usage errors exit through parser.exit
            code = int(e.code or 0)
    assert code == 3
    lines = [ln for ln in err.getvalue().splitlines() if ln.startswith("specgate: error:")]
    assert len(lines) == 1 and msg in lines[0], err.getvalue()


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "p.yaml"
    out.write_text("mine\n", encoding="utf-8")
    code, err = _init(["--target", str(CONFIGS / "tiny-target.json"), "--engine", "vllm", "--method", "ngram",
                       "--out", str(out)])
    assert code == 3 and "exists" in err and out.read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llamacpp"])
def test_init_reads_the_block_as_the_engines_do(engine: str) -> None:
    """dflash_config.block_size before the top-level block_size (`drafter_block_size`, SGLang's order): init read
    the top-level key first, so a drafter giving both got another block from init than from the checks."""
    both = choose_depth(engine, "dflash", {}, {"block_size": 16, "dflash_config": {"block_size": 10}}, None)
    assert both == choose_depth(engine, "dflash", {}, {"block_size": 10}, None)
    assert both != choose_depth(engine, "dflash", {}, {"block_size": 16}, None)
