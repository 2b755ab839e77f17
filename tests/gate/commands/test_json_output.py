"""Every JSON the CLI and the HTTP gate print goes through `gate.inputs.jsontext.dumps` (issue 34, item 3): a
computation that yields a non-finite number is refused with one line naming the number's path and exit 3 (the
HTTP gate: a 500 error, never a pass), never printed as `Infinity`/`NaN`, which no JSON reader takes.

The computations are made to yield `inf`/`nan` at their last step (the command's own `as_json` or the
computation it calls), on real inputs: what is tested is the print path, which every such number reaches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests

import gate.bill.budget
import gate.commands.codesign
import gate.commands.kv
from gate.cli import main
from gate.verdict.answer import GateAnswer
from tests.gate.helpers import CONFIGS, tiny_plan, write_plan
from tests.k8s.test_k8s_webhook import Scripted, start

TARGET = str(CONFIGS / "target-gqa__meta-llama__Llama-3.1-8B-Instruct.json")


def _one_line_refusal(capsys: pytest.CaptureFixture[str], path: str) -> None:
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and "not finite" in err and path in err, err


def _no_constant(name: str) -> Any:
    raise AssertionError(f"the answer carries {name}, which is not JSON")


def test_kv_refuses_a_non_finite_number(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = gate.commands.kv.as_json
    monkeypatch.setattr(gate.commands.kv, "as_json", lambda geom: {**real(geom), "bytes_per_token": float("inf")})
    assert main(["kv", TARGET, "--format", "json"]) == 3
    _one_line_refusal(capsys, "$.bytes_per_token (inf)")
    assert main(["kv", TARGET]) == 0  # the text table has no JSON to refuse


def test_budget_refuses_a_non_finite_number(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    real = gate.bill.budget.compute_budget

    class Nan:
        def __init__(self, budget: Any) -> None:
            self.budget = budget

        def to_json(self) -> dict[str, Any]:
            doc = self.budget.to_json()
            doc["pool"]["predicted_tokens"]["with_drafter"] = float("nan")
            return dict(doc)

    monkeypatch.setattr(gate.bill.budget, "compute_budget", lambda *a, **k: Nan(real(*a, **k)))
    plan = write_plan(tmp_path / "p.yaml", tiny_plan("draft"))
    assert main(["budget", "--plan", str(plan), "--format", "json"]) == 3
    _one_line_refusal(capsys, "$.pool.predicted_tokens.with_drafter (nan)")


def test_codesign_refuses_a_non_finite_number(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    real = gate.commands.codesign.as_json
    monkeypatch.setattr(gate.commands.codesign, "as_json",
                        lambda result: {**real(result), "findings": [{"value": float("-inf")}]})
    assert main(["codesign", TARGET, "none", "--format", "json"]) == 3
    _one_line_refusal(capsys, "$.findings[0].value (-inf)")


def test_the_http_gate_answers_an_error_not_infinity(monkeypatch: pytest.MonkeyPatch) -> None:
    real = GateAnswer.to_json
    monkeypatch.setattr(GateAnswer, "to_json", lambda self: {**real(self), "score": float("inf")})
    url, server = start(Scripted("pass"))
    try:
        r = requests.get(f"{url}/argo", timeout=10)
        assert r.status_code == 500
        assert "not finite" in json.loads(r.text, parse_constant=_no_constant)["error"]
        h = requests.get(f"{url}/healthz", timeout=10)  # the server carries on
        assert h.status_code == 200 and h.json() == {"status": "ok"}
    finally:
        server.shutdown()
        server.server_close()
