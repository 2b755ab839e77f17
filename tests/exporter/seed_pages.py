"""vLLM exposition pages built from given counter values (for seed 004's vectors and synthetic cases).

The format copies the real vLLM 0.32 captures in tests/fixtures/vllm/ (counter TYPE lines carry
the `_total` name, every series has `engine` and `model_name`).
"""

from __future__ import annotations


def vllm_page(drafts: float, draft_tokens: float, accepted: float, per_pos: list[float],
              generation: float = 0.0, prompt: float = 0.0, running: float = 0.0, start: float = 1.0e9,
              model: str = "m", engine: str = "0", blocks: int = 64, block_size: int = 128) -> str:
    lab = f'engine="{engine}",model_name="{model}"'
    lines = [
        "# TYPE process_start_time_seconds gauge",
        f"process_start_time_seconds {start}",
        "# TYPE vllm:cache_config_info gauge",
        f'vllm:cache_config_info{{block_size="{block_size}",engine="{engine}",num_gpu_blocks="{blocks}"}} 1.0',
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{{{lab}}} {running}",
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        f"vllm:spec_decode_num_drafts_total{{{lab}}} {drafts}",
        "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
        f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {draft_tokens}",
        "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
        f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {accepted}",
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter",
    ]
    lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{i}"}} {v}'
              for i, v in enumerate(per_pos)]
    lines += [
        "# TYPE vllm:generation_tokens_total counter",
        f"vllm:generation_tokens_total{{{lab}}} {generation}",
        "# TYPE vllm:prompt_tokens_total counter",
        f"vllm:prompt_tokens_total{{{lab}}} {prompt}",
    ]
    return "\n".join(lines) + "\n"
