"""The SGLang KV-sizing oracle re-recorded on SGLang itself (issue 35.3): tools/oracle/sglang_kv_sizing.py, run
in-process on the SGLang 0.5.23 venv's python (no server, no model), answers exactly what tests/fixtures/oracle
holds — so the fixture `make test` replays against the gate's SGLang hybrid pool is SGLang's answer, not a stale
copy. About 14 s.
"""

from __future__ import annotations

from pathlib import Path

from oracle import rerecord


def test_sglang_sizes_what_the_fixture_holds(sglang_python: Path, tmp_path: Path) -> None:
    out = tmp_path / "kv-sizing.json"
    rerecord(sglang_python, "sglang_kv_sizing.py", [out], out, "sglang-0.5.23-kv-sizing.json", "0.5.23", within=30)
