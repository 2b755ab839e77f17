"""The vLLM KV-sizing oracle re-recorded on vLLM itself (issue 35.3): tools/oracle/vllm_kv_sizing.py, run in-process on
the vLLM 0.32.0 venv's python (no server, no model), answers exactly what tests/fixtures/oracle holds — so the
fixture `make test` replays against the gate's vLLM hybrid pool is vLLM's answer, not a stale copy. About 12 s.
"""

from __future__ import annotations

from pathlib import Path

from oracle import rerecord


def test_vllm_sizes_what_the_fixture_holds(vllm_python: Path, tmp_path: Path) -> None:
    out = tmp_path / "kv-sizing.json"
    rerecord(vllm_python, "vllm_kv_sizing.py", [out], out, "vllm-0.32.0-kv-sizing.json", "0.32.0", within=90)
