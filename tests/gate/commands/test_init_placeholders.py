"""`specgate init` writes the keys it leaves empty as the plan's `placeholders` list (issue 36 item 3).

Why: `check` holds a line that reads one of them (tests/gate/checks/test_placeholders.py), so the list must be
exactly the TODO keys written as null or [] — one missing would let its line pass on an empty value, one too many
would hold a line on a value init filled (the drafter's name, the staging mode) — on every engine, whose TODO lines
differ (llama.cpp has no block size or memory fraction to ask for).
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from exporter.engines import ENGINE_KINDS
from gate.cli import main
from gate.plan.init import placeholder_keys
from gate.plan.model import load_plan
from tests.gate.helpers import CONFIGS

DEEPSEEK = CONFIGS / "target-mla-mtp__deepseek-ai__DeepSeek-V3.json"


def _init(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "plan.yaml"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["init", *args, "--out", str(out)]) == 0
    return out


def test_deepseek_v3_mtp_on_vllm_lists_every_todo_key(tmp_path: Path) -> None:
    out = _init(tmp_path, "--target", str(DEEPSEEK), "--engine", "vllm", "--method", "mtp")
    plan = load_plan(out)
    assert plan.placeholders == [
        "description", "target.revision", "target.weights.path", "engine.version", "engine.block_size",
        "engine.kv_cache_memory_bytes", "engine.memory_fraction", "engine.context_cap_tokens",
        "budgets.storage_bytes", "budgets.gpu_memory_bytes", "workload",
        "slo.target_acceptance_length", "slo.target_source", "costs"]
    # no startup budget asked for: the MTP head is no second artifact to stage, the staging line n/a (issue 36 b)
    assert "budgets.startup_seconds" not in plan.placeholders and plan.budgets.startup_seconds is None
    assert plan.open_placeholders == tuple(plan.placeholders)  # nothing filled yet


@pytest.mark.parametrize("engine", ENGINE_KINDS)
def test_the_list_is_the_todo_lines_written_empty_on_every_engine(engine: str, tmp_path: Path) -> None:
    out = _init(tmp_path, "--target", str(CONFIGS / "tiny-target.json"), "--drafter", str(CONFIGS / "tiny-draft.json"),
                "--engine", engine, "--method", "draft_model")
    text = out.read_text(encoding="utf-8")
    plan = load_plan(out)
    # each `key: null  # TODO` / `key: []  # TODO` line, and each null under `budgets:  # TODO`, once
    todo_lines = re.findall(r"^ *(\w+): (?:null|\[\])  # TODO", text, re.MULTILINE)
    budgets = re.findall(r"^  (\w+): null  # (?!TODO)", text.split("budgets:", 1)[1].split("\n\n", 1)[0], re.MULTILINE)
    assert sorted(k.rsplit(".", 1)[-1] for k in plan.placeholders) == sorted(todo_lines + budgets)
    assert "drafter.name" not in plan.placeholders and "staging.mode" not in plan.placeholders  # filled by init
    assert "drafter.weights.path" in plan.placeholders and "staging.warmup_check" in plan.placeholders
    assert ("engine.block_size" in plan.placeholders) is (engine != "llamacpp")
    assert plan.open_placeholders == tuple(plan.placeholders)


def test_the_reader_takes_keys_from_their_sections() -> None:
    text = ("a: null  # TODO: x\nb:\n  c: null  # TODO\n  d: 1  # TODO\n  e: null  # not asked\n"
            "f:  # TODO: all of them\n  g: null\n  h: []  # a comment\n  i:\n    j: null  # TODO\nk: []  # TODO\n")
    assert placeholder_keys(text) == ["a", "b.c", "f.g", "f.h", "f.i.j", "k"]
