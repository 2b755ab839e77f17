"""The vLLM speculative-validation oracle re-recorded on vLLM itself (issue 35.1): tools/oracle/
vllm_speculative_validation.py, run in-process on the vLLM 0.32.0 venv's python (SpeculativeConfig and the
scheduler's build_dynamic_sd_schedule_lookup; target ModelConfigs from config.json only, no server, no weights),
answers exactly what tests/fixtures/oracle holds, so the fixture `make test` replays against the gate's vLLM
answers is vLLM's, not a stale copy. About 55 s (a ModelConfig per config file).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from harness import _engine_env

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "vllm-0.32.0-speculative-validation.json"


def test_vllm_validates_what_the_fixture_holds(vllm_python: Path, tiny_models: Path, tmp_path: Path) -> None:
    out = tmp_path / "validation.json"
    started = time.monotonic()
    run = subprocess.run([str(vllm_python), str(ROOT / "tools" / "oracle" / "vllm_speculative_validation.py"),
                          str(out), str(tiny_models)], env=_engine_env(), capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    assert time.monotonic() - started < 110
    fresh, kept = json.loads(out.read_text()), json.loads(FIXTURE.read_text())
    assert fresh["version"] == kept["version"] == "0.32.0"
    moved = [(a["inputs"], a["answer"], b["answer"]) for a, b in zip(fresh["rows"], kept["rows"], strict=True)
             if a != b]
    assert moved == []
    assert fresh == kept
