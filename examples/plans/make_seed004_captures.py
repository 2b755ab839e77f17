"""Write seed 004's vLLM counter captures (examples/plans/captures/seed004-*.txt).

Seed 004 snapshotted `vllm:spec_decode_*` before and after each prompt length, so each length
is one window. Its per-position accepted counts are 434/371/298 at 2K (2,040 prompt tokens,
6 repeats) and 359/290/240 at 131K (131,290 tokens, 5 repeats). The drafts (467 and 423) and
draft tokens (1,401 and 1,269 = 3 × drafts at k=3) are derived from those counts and the
seed's L, as DESIGN.md "Derived quantities" states; they reproduce L 3.362 / 3.102 and
a 78.7% / 70.1%. Only the deltas are the seed's: the starting counters (zero here) are not
reported, so the absolute values are arbitrary. Prompt tokens are the seed's lengths × repeats.

Generation tokens are what vLLM counts for those drafts: each request's first token from prefill, then
each verify round its accepted tokens and one of the target's — drafts + accepted + requests (1,576 at
2K, 1,317 at 131K). The seed's "256 output tokens" × repeats (1,536 and 1,280) is fewer than its own
counters imply (467 drafts + 1,103 accepted = 1,570), so no engine could have written both, and the
gate refuses such a page (gate.model.plausibility.capture_counters); the seed's L, drafts, per-position
counts and k are kept, its output count is not.

Run: python examples/plans/make_seed004_captures.py   (idempotent; writes three files)
"""

from __future__ import annotations

from pathlib import Path

MODEL = "unsloth/Qwen3.6-35B-A3B-NVFP4-Fast"
OUT = Path(__file__).resolve().parent / "captures"

# (name, drafts, draft tokens, per-position accepted, prompt tokens, generation tokens) per length; generation =
# drafts + accepted + one prefill token per request (module docstring).
POINTS = [
    ("2k", 467, 1401, (434, 371, 298), 2040 * 6, 467 + (434 + 371 + 298) + 6),
    ("131k", 423, 1269, (359, 290, 240), 131290 * 5, 423 + (359 + 290 + 240) + 5),
]


def page(drafts: int, draft_tokens: int, per_pos: tuple[int, ...], prompt: int, generation: int) -> str:
    labels = f'engine="0",model_name="{MODEL}"'
    lines = [
        # the counters are the seed's reported numbers, not a measurement: the gate shows their L as reported
        "# specgate: reported: seed 004's counters, rebuilt as a /metrics page by make_seed004_captures.py",
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
        "# TYPE process_start_time_seconds gauge",
        "process_start_time_seconds 1.7856e+09",
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{{{labels}}} 0.0",
        "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
        "# TYPE vllm:prompt_tokens_total counter",
        f"vllm:prompt_tokens_total{{{labels}}} {float(prompt)}",
        "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
        "# TYPE vllm:generation_tokens_total counter",
        f"vllm:generation_tokens_total{{{labels}}} {float(generation)}",
        "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        f"vllm:spec_decode_num_drafts_total{{{labels}}} {float(drafts)}",
        "# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.",
        "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
        f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {float(draft_tokens)}",
        "# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.",
        "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
        f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {float(sum(per_pos))}",
        "# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.",
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter",
    ]
    lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{i}"}} {float(v)}'
              for i, v in enumerate(per_pos)]
    return "\n".join(lines) + "\n"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    totals = [0, 0, [0, 0, 0], 0, 0]
    files = [("seed004-0-start.txt", page(0, 0, (0, 0, 0), 0, 0))]
    for i, (name, drafts, draft_tokens, per_pos, prompt, gen) in enumerate(POINTS, start=1):
        totals[0] += drafts
        totals[1] += draft_tokens
        totals[2] = [a + b for a, b in zip(totals[2], per_pos, strict=True)]
        totals[3] += prompt
        totals[4] += gen
        files.append((f"seed004-{i}-after-{name}.txt",
                      page(totals[0], totals[1], tuple(totals[2]), totals[3], totals[4])))
    for fname, text in files:
        (OUT / fname).write_text(text, encoding="utf-8")
        print(OUT / fname)


if __name__ == "__main__":
    main()
