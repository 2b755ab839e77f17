"""The llama.cpp vocabulary oracle re-recorded on llama-server itself (issue 35.1): tools/oracle/llamacpp_vocab.py
writes the tiny draft with 0, 1, 128, 129 and 300 extra tokens, another BOS or EOS id, or one token's text
changed, starts `llama-server --model target.gguf --spec-draft-model draft.gguf` on each (127.0.0.1, its own
processes, stopped by PID), and answers exactly what tests/fixtures/oracle holds, so the fixture `make test`
replays against `vocabulary_rule` is llama-server's answer, not a stale copy. About 5 s.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from harness import _engine_env
from llamacpp_live import LLAMACPP_SCRIPT, ensure_llamacpp

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "oracle" / "llamacpp-11434-vocab.json"


def test_llama_server_takes_the_drafts_the_fixture_says(vllm_python: Path, tiny_models: Path,
                                                         tmp_path: Path) -> None:
    server = ensure_llamacpp()
    src = subprocess.run(["bash", str(LLAMACPP_SCRIPT), "--src"], check=True, stdout=subprocess.PIPE, text=True,
                         timeout=600).stdout.strip().splitlines()[-1]
    out = tmp_path / "vocab.json"
    started = time.monotonic()
    run = subprocess.run([str(vllm_python), str(ROOT / "tools" / "oracle" / "llamacpp_vocab.py"), str(server), src,
                          str(tiny_models), str(out)], env=_engine_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert time.monotonic() - started < 60
    fresh, kept = json.loads(out.read_text()), json.loads(FIXTURE.read_text())
    assert fresh["version"] == kept["version"] == "b11434"
    moved = [(a["inputs"]["case"], a["answer"], b["answer"]) for a, b in zip(fresh["rows"], kept["rows"], strict=True)
             if a != b]
    assert moved == []
    assert fresh == kept
