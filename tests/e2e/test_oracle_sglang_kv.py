"""The SGLang KV-sizing oracle re-recorded on SGLang itself (issue 35.3): tools/oracle/sglang_kv_sizing.py, run
in-process on the SGLang 0.5.23 venv's python (no server, no model), answers exactly what tests/fixtures/oracle
holds — so the fixture `make test` replays against the gate's SGLang hybrid pool is SGLang's answer, not a stale
copy. About 14 s.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from harness import _engine_env

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "sglang-0.5.23-kv-sizing.json"


def test_sglang_sizes_what_the_fixture_holds(sglang_python: Path, tmp_path: Path) -> None:
    out = tmp_path / "kv-sizing.json"
    started = time.monotonic()
    run = subprocess.run([str(sglang_python), str(ROOT / "tools" / "oracle" / "sglang_kv_sizing.py"), str(out)],
                         env=_engine_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert time.monotonic() - started < 30
    fresh, kept = json.loads(out.read_text()), json.loads(FIXTURE.read_text())
    assert fresh["version"] == kept["version"] == "0.5.23"
    assert len(fresh["rows"]) == len(kept["rows"])
    moved = [(a["inputs"], a["answer"], b["answer"]) for a, b in zip(fresh["rows"], kept["rows"], strict=True)
             if a != b]
    assert moved == []
    assert fresh == kept
