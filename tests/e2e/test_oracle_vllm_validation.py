"""The vLLM speculative-validation oracle re-recorded on vLLM itself (issue 35.1): tools/oracle/
vllm_speculative_validation.py, run in-process on the vLLM 0.32.0 venv's python (SpeculativeConfig and the
scheduler's build_dynamic_sd_schedule_lookup; target ModelConfigs from config.json only, no server, no weights),
answers exactly what tests/fixtures/oracle holds, so the fixture `make test` replays against the gate's vLLM
answers is vLLM's, not a stale copy. About 55 s (a ModelConfig per config file).
"""

from __future__ import annotations

from pathlib import Path

from oracle import rerecord


def test_vllm_validates_what_the_fixture_holds(vllm_python: Path, tiny_models: Path, tmp_path: Path) -> None:
    out = tmp_path / "validation.json"
    rerecord(vllm_python, "vllm_speculative_validation.py", [out, tiny_models], out,
             "vllm-0.32.0-speculative-validation.json", "0.32.0", within=110, timeout=180)
