"""Re-recording an engine oracle on the engine itself (issue 35): one recorder under tools/oracle/, run with the
engine venv's python, must answer exactly what its fixture under tests/fixtures/oracle holds, so the fixture that
`make test` replays against the gate's profile is the engine's answer, not a stale copy.

Why one function: the five re-record tests (SGLang adaptive and spec resolution, SGLang and vLLM KV sizing, vLLM
validation, llama-server's vocabulary) made the same run and the same comparison, each written out again.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import _engine_env

ROOT = Path(__file__).resolve().parents[2]
ORACLE = ROOT / "tests" / "fixtures" / "oracle"


def rerecord(python: Path, recorder: str, argv: Sequence[str | Path], out: Path, fixture: str, version: str, *,
             within: float, timeout: float = 120, env: Mapping[str, str] | None = None,
             key: Callable[[dict[str, Any]], Any] = lambda row: row["inputs"]) -> None:
    """Run tools/oracle/<recorder> with `argv` (which names `out`), within `within` seconds, and require its answer
    to be the fixture's: the same engine version, the same rows (the moved ones listed by `key`), the same file."""
    started = time.monotonic()
    run = subprocess.run([str(python), str(ROOT / "tools" / "oracle" / recorder), *map(str, argv)],
                         env={**_engine_env(), **(env or {})}, capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, run.stderr[-2000:]
    assert time.monotonic() - started < within
    fresh, kept = json.loads(out.read_text()), json.loads((ORACLE / fixture).read_text())
    assert fresh["version"] == kept["version"] == version
    assert len(fresh["rows"]) == len(kept["rows"])
    moved = [(key(a), a["answer"], b["answer"]) for a, b in zip(fresh["rows"], kept["rows"], strict=True) if a != b]
    assert moved == []
    assert fresh == kept
