"""The llama.cpp vocabulary oracle re-recorded on llama-server itself (issue 35.1): tools/oracle/llamacpp_vocab.py
writes the tiny draft with 0, 1, 128, 129 and 300 extra tokens, another BOS or EOS id, or one token's text
changed, starts `llama-server --model target.gguf --spec-draft-model draft.gguf` on each (127.0.0.1, its own
processes, stopped by PID), and answers exactly what tests/fixtures/oracle holds, so the fixture `make test`
replays against `vocabulary_rule` is llama-server's answer, not a stale copy. About 5 s.
"""

from __future__ import annotations

from pathlib import Path

from llamacpp_live import ensure_llamacpp, llamacpp_source
from oracle import rerecord


def test_llama_server_takes_the_drafts_the_fixture_says(vllm_python: Path, tiny_models: Path,
                                                         tmp_path: Path) -> None:
    server = ensure_llamacpp()
    src = llamacpp_source()
    out = tmp_path / "vocab.json"
    rerecord(vllm_python, "llamacpp_vocab.py", [server, src, tiny_models, out], out, "llamacpp-11434-vocab.json",
             "b11434", within=60, key=lambda row: row["inputs"]["case"])
