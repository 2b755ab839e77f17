"""Probe records swept over context, shaped like the real ones (issue 39).

The envelope (schema, engine, model, speculative settings, client ceiling, cell fields) is the real vLLM 0.32.0
ngram probe of tests/fixtures/tune-emit/ (`specgate probe` on the tiny CPU target). The cells are rewritten to
seed 004's sweep at concurrency 1, k = 3: the 2,040- and 131,290-token rungs carry the seed's own numbers (plain
step 14.14 -> 19.84 ms, verify cycle 31.16 -> 38.35 ms, L 3.362 -> 3.102, so its decomposition is 5.70 / 7.21 ms,
0.503 ms a draft step, 8.8 %); the 32,779-token rung is made up between them (the seed calls it noisy). Each of
five repetitions moves the step by -1 .. +1 % so that the bands are not points (and the rank test can
decide: 5 against 5).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tune-emit"
CONTEXTS = (2040, 32779, 131290)
STEP_MS = {2040: 14.14, 32779: 15.6, 131290: 19.84}
CYCLE_MS = {2040: 31.16, 32779: 33.4, 131290: 38.35}
LENGTH = {2040: 3.362, 32779: 3.2, 131290: 3.102}
JITTER = (0.99, 0.995, 1.0, 1.005, 1.01)
OUT = 256
REQUESTS = 4


def _cell(template: dict[str, Any], ctx: int, rep: int, step_ms: float, length: float | None) -> dict[str, Any]:
    per_token = step_ms / (length or 1.0) / 1000.0
    wall = REQUESTS * OUT * per_token
    drafts = None if length is None else round(REQUESTS * OUT / length)
    accepted = None if drafts is None or length is None else (length - 1) * drafts
    cell = dict(template)
    cell.update(mix=f"p{ctx}-o{OUT}", concurrency=1, repetition=rep, requests=REQUESTS, output_tokens=REQUESTS * OUT,
                prompt_tokens=REQUESTS * ctx, wall_seconds=wall, served_tokens_per_second=REQUESTS * OUT / wall,
                tpot_seconds={"p50": per_token, "p90": per_token, "p99": per_token},
                acceptance_length=None if drafts is None else 1 + (accepted or 0) / drafts,
                acceptance_rate=None if drafts is None else (accepted or 0) / (3 * drafts),
                drafts=None if drafts is None else float(drafts),
                draft_tokens=None if drafts is None else float(3 * drafts),
                accepted_tokens=accepted, per_request_acceptance_length=None,
                engine_step_seconds=step_ms / 1000.0, engine_steps=float(REQUESTS * OUT / (length or 1.0)),
                started_at=1796167384.0 + 100 * rep + ctx / 1e4, client_bound=False)
    return cell


def write(tmp: Path, *, step_ms: dict[int, float] = STEP_MS, cycle_ms: dict[int, float] = CYCLE_MS,
          length: dict[int, float] = LENGTH) -> tuple[Path, Path]:
    """(baseline, speculative) record files in `tmp`."""
    out = []
    for arm, k in (("baseline", 0), ("speculative", 3)):
        doc = json.loads((FIXTURES / f"vllm-0.32.0-ngram-probe-k{k}.json").read_text())
        template = doc["cells"][0]
        doc["workload"] = [dict(doc["workload"][0], name=f"p{c}-o{OUT}", prompt_tokens=c, output_tokens=OUT,
                                prompts_from="engine_tokenizer") for c in CONTEXTS]
        doc["repetitions"] = len(JITTER)
        doc["cells"] = [_cell(template, c, rep, (cycle_ms[c] if k else step_ms[c]) * j, length[c] if k else None)
                        for rep, j in enumerate(JITTER, 1) for c in CONTEXTS]
        path = tmp / f"{arm}.json"
        path.write_text(json.dumps(doc))
        out.append(path)
    return out[0], out[1]
