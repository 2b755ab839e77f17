"""The SGLang oracle re-recorded on SGLang itself (issue 35.2): tools/oracle/sglang_adaptive.py, run in-process on
the SGLang 0.5.23 venv's python (no server, no model), answers exactly what tests/fixtures/oracle holds — so the
fixture `make test` replays against the gate's profile is SGLang's answer, not a stale copy. About 10 s.
"""

from __future__ import annotations

from pathlib import Path

from oracle import rerecord

CPU = {"SGLANG_USE_CPU_ENGINE": "1"}


def test_sglang_answers_what_the_fixture_holds(sglang_python: Path, tmp_path: Path) -> None:
    out = tmp_path / "adaptive.json"
    rerecord(sglang_python, "sglang_adaptive.py", [out], out, "sglang-0.5.23-adaptive.json", "0.5.23", within=30,
             env=CPU)


def test_sglang_resolves_what_the_spec_fixture_holds(sglang_python: Path, tmp_path: Path) -> None:
    """tools/oracle/sglang_spec_resolution.py (handle_speculative_decoding on a constructed ServerArgs per config
    family) answers exactly what tests/fixtures/oracle holds. About 25 s."""
    out = tmp_path / "spec.json"
    rerecord(sglang_python, "sglang_spec_resolution.py", [out], out, "sglang-0.5.23-spec-resolution.json", "0.5.23",
             within=120, env=CPU)
