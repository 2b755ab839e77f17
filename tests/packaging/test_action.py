"""action.yml, the composite GitHub Action, run step by step here as a runner would: each step's `run` script
with bash, its `env` with the `${{ }}` expressions filled in (inputs with their defaults, github.action_path,
runner.temp), and the runner's GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files. The install step really creates a
venv and pip-installs the action's checkout (a copy of the build context: the shared checkout is not written
to); the check step runs the example plans and must exit with the gate's code, write the Markdown report to the
summary, JUnit to its file and the decision to the outputs. What is not exercised here: GitHub's own runner
(`uses:` resolution, the expression engine beyond these three contexts)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
PLANS = REPO / "examples" / "plans"
CONTEXT = ("pyproject.toml", "README.md", "exporter", "gate", "action.yml")
EXPR = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def _expand(value: str, ctx: dict[str, str]) -> str:
    def sub(m: re.Match) -> str:
        assert m.group(1) in ctx, f"expression {m.group(0)} is not one this test provides"
        return ctx[m.group(1)]
    return EXPR.sub(sub, value)


def _steps() -> dict[str, dict]:
    assert ACTION["runs"]["using"] == "composite"
    return {s.get("id", s["name"]): s for s in ACTION["runs"]["steps"]}


def test_action_shape() -> None:
    steps = _steps()
    assert list(steps) == ["Install specgate", "check"]
    assert ACTION["inputs"]["plan"]["required"] is True
    # The outputs read what the check step writes.
    written = set(re.findall(r'echo "([\w-]+)=', steps["check"]["run"]))
    for name, out in ACTION["outputs"].items():
        m = EXPR.fullmatch(out["value"].strip())
        assert m and m.group(1) == f"steps.check.outputs.{name}" and name in written, name
    for s in steps.values():
        assert s["shell"] == "bash"
        # Inputs only through env: no expression inside a script (script injection).
        assert "${{" not in s["run"], s["name"]


class Runner:
    """The parts of a GitHub runner the steps use."""

    def __init__(self, tmp: Path, action_path: Path, workspace: Path) -> None:
        self.tmp, self.action_path, self.workspace = tmp, action_path, workspace
        self.temp = tmp / "runner-temp"
        self.temp.mkdir(exist_ok=True)

    def run(self, step: dict, inputs: dict[str, str]) -> tuple[subprocess.CompletedProcess, dict[str, str], str]:
        values = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()} | inputs
        ctx = {f"inputs.{k}": v for k, v in values.items()}
        ctx |= {"github.action_path": str(self.action_path), "runner.temp": str(self.temp)}
        output, summary = self.tmp / "output", self.tmp / "summary"
        output.write_text("")
        summary.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPECGATE_", "VIRTUAL_ENV"))}
        env |= {k: _expand(str(v), ctx) for k, v in step.get("env", {}).items()}
        env |= {"GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_ACTION_PATH": str(self.action_path), "RUNNER_TEMP": str(self.temp)}
        proc = subprocess.run(["bash", "-c", step["run"]],
                              cwd=self.workspace, env=env, capture_output=True, text=True, timeout=600)
        outs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        return proc, outs, summary.read_text()


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    action_path = tmp_path_factory.mktemp("action")
    for name in CONTEXT:
        p = REPO / name
        if p.is_dir():
            shutil.copytree(p, action_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(p, action_path / name)
    workspace = tmp_path_factory.mktemp("workspace")
    shutil.copytree(PLANS, workspace / "plans")
    r = Runner(tmp_path_factory.mktemp("runner"), action_path, workspace)
    proc, _, _ = r.run(_steps()["Install specgate"], {"plan": "unused", "python": sys.executable})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (r.temp / "specgate-venv" / "bin" / "specgate").exists()
    return r


@cache
def _expected(plan: Path, *extra: str) -> tuple[int, str]:
    """What the checkout's own `specgate check` decides on the plan."""
    out = subprocess.run([str(REPO / ".venv" / "bin" / "specgate"), "check", "--plan", str(plan), "--format", "json",
                          *extra], capture_output=True, text=True, timeout=120)
    return out.returncode, json.loads(out.stdout)["decision"]


PLAN_FILES = sorted(p.name for p in PLANS.glob("*.yaml"))


@pytest.mark.parametrize("plan", PLAN_FILES)
def test_check_step_exits_with_the_gates_code(runner: Runner, plan: str) -> None:
    code, decision = _expected(PLANS / plan)
    proc, outs, summary = runner.run(_steps()["check"], {"plan": f"plans/{plan}", "junit-file": f"{plan}.xml"})
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert outs == {"decision": decision, "exit-code": str(code), "junit-file": f"{plan}.xml"}
    assert "::warning" not in proc.stdout
    # The Markdown report in the job summary, naming the decision and the budget lines.
    assert decision in summary.lower() and "|" in summary and "kv_pool" in summary, summary[:500]
    suite = ET.parse(runner.workspace / f"{plan}.xml").getroot()
    cases = list(suite.iter("testcase"))
    assert len(cases) >= 5  # one per budget line
    failures = [c for c in cases if c.find("failure") is not None]
    errors = [c for c in cases if c.find("error") is not None]  # inconclusive lines
    assert bool(failures) == (decision == "fail"), ET.tostring(suite)[:800]
    if decision == "pass":
        assert not errors


def test_the_examples_cover_more_than_one_decision() -> None:
    decisions = {_expected(PLANS / p)[1] for p in PLAN_FILES}
    assert len(decisions) >= 2, decisions


def test_allow_inconclusive_turns_inconclusive_into_exit_0(runner: Runner) -> None:
    inconclusive = [p for p in PLAN_FILES if _expected(PLANS / p)[1] == "inconclusive"]
    assert inconclusive, "no example plan is inconclusive: this path needs one (seed002 is, tests/gate/expected/)"
    proc, outs, summary = runner.run(_steps()["check"], {"plan": f"plans/{inconclusive[0]}",
                                                         "allow-inconclusive": "true"})
    assert proc.returncode == 0, proc.stderr
    assert outs["decision"] == "inconclusive" and outs["exit-code"] == "0"


def test_invalid_plan_exits_3(runner: Runner) -> None:
    proc, outs, summary = runner.run(_steps()["check"], {"plan": "plans/does-not-exist.yaml"})
    assert proc.returncode == 3
    assert outs["decision"] == "invalid" and outs["exit-code"] == "3"
    assert "could not judge" in summary


def test_inputs_cannot_inject_shell(runner: Runner) -> None:
    marker = runner.tmp / "injected"
    proc, outs, _ = runner.run(_steps()["check"], {"plan": f'x"; touch {marker}; echo "', "phase": "pre"})
    assert not marker.exists()
    assert proc.returncode == 3 and outs["decision"] == "invalid"
