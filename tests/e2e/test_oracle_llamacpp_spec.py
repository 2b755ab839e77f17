"""The llama.cpp fixed-k oracle re-recorded on llama-server itself (issue 35.1): tools/oracle/llamacpp_spec.py writes
tiny GGUFs in each config family's architecture (tools/tiny_gguf.py SHAPES), starts `llama-server` on each with the
flags the gate launches (127.0.0.1, its own processes, stopped by PID) and must answer exactly what
tests/fixtures/oracle/llamacpp-11434-spec.json holds: start-up or refusal, the slots and caches, the most tokens a
round drafts and a block drafter's clamp line. So the fixture `make test` replays against the llama.cpp profile
(`block_round`, `own_keys_pool`, `server_cache`) is llama-server's answer, not a stale copy. About 6 s.
"""

from __future__ import annotations

from pathlib import Path

from llamacpp_live import ensure_llamacpp, llamacpp_source
from oracle import rerecord


def test_llama_server_answers_the_fixed_k_rows_the_fixture_says(vllm_python: Path, tiny_models: Path,
                                                                tmp_path: Path) -> None:
    server = ensure_llamacpp()
    src = llamacpp_source()
    out = tmp_path / "spec.json"
    rerecord(vllm_python, "llamacpp_spec.py", [server, src, tiny_models, out], out, "llamacpp-11434-spec.json",
             "b11434", within=90,
             key=lambda row: (row["inputs"]["family"], row["inputs"]["target"]["shape"],
                              row["inputs"].get("drafter", {}).get("shape"), row["inputs"]["k"]))
