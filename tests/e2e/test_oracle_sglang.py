"""The SGLang oracle re-recorded on SGLang itself (issue 35.2): tools/oracle/sglang_adaptive.py, run in-process on
the SGLang 0.5.23 venv's python (no server, no model), answers exactly what tests/fixtures/oracle holds — so the
fixture `make test` replays against the gate's profile is SGLang's answer, not a stale copy. About 10 s.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from harness import _engine_env

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "sglang-0.5.23-adaptive.json"


def test_sglang_answers_what_the_fixture_holds(sglang_python: Path, tmp_path: Path) -> None:
    out = tmp_path / "adaptive.json"
    started = time.monotonic()
    run = subprocess.run([str(sglang_python), str(ROOT / "tools" / "oracle" / "sglang_adaptive.py"), str(out)],
                         env={**_engine_env(), "SGLANG_USE_CPU_ENGINE": "1"}, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert time.monotonic() - started < 30
    fresh, kept = json.loads(out.read_text()), json.loads(FIXTURE.read_text())
    assert fresh["version"] == kept["version"] == "0.5.23"
    assert len(fresh["rows"]) == len(kept["rows"])
    moved = [(a["inputs"], a["answer"], b["answer"]) for a, b in zip(fresh["rows"], kept["rows"], strict=True)
             if a != b]
    assert moved == []
    assert fresh == kept


def test_sglang_resolves_what_the_spec_fixture_holds(sglang_python: Path, tmp_path: Path) -> None:
    """tools/oracle/sglang_spec_resolution.py (handle_speculative_decoding on a constructed ServerArgs per config
    family) answers exactly what tests/fixtures/oracle holds. About 25 s."""
    out = tmp_path / "spec.json"
    run = subprocess.run([str(sglang_python), str(ROOT / "tools" / "oracle" / "sglang_spec_resolution.py"), str(out)],
                         env={**_engine_env(), "SGLANG_USE_CPU_ENGINE": "1"}, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    fresh = json.loads(out.read_text())
    kept = json.loads((ROOT / "tests" / "fixtures" / "oracle" / "sglang-0.5.23-spec-resolution.json").read_text())
    assert [r["answer"] for r in fresh["rows"]] == [r["answer"] for r in kept["rows"]] and fresh == kept
