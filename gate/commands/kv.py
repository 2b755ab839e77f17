"""KV-cache bytes per token from a Hugging Face config.json.

bytes_per_token sums the layers whose KV grows with every token (full attention, GQA,
MHA, MLA), per tensor-parallel rank (KV heads divided by --tp, never below one; MLA is
not divided). Sliding-window layers (capped at their window), the constant state of
linear-attention / Mamba layers and a target's MTP layers (the drafter's) are reported
in the breakdown. The dtype defaults to the config's torch_dtype, else bf16.

Exit codes: 0 ok, 3 invalid input (missing or unreadable config, unknown layout).
"""

from __future__ import annotations

import argparse
from typing import Any

from gate.commands._args import exit_invalid_on_usage_error, invalid, positive_int
from gate.inputs.configs import load_config
from gate.inputs.jsontext import dumps
from gate.model.geometry import KVGeometry, kv_geometry
from gate.status import EXIT_PASS, InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    exit_invalid_on_usage_error(parser)
    parser.add_argument("config", metavar="CONFIG", help="config.json (or a directory holding one)")
    parser.add_argument("--dtype", choices=("bf16", "fp16", "fp8", "fp32"),
                        help="KV cache dtype (default: the config's torch_dtype, else bf16)")
    parser.add_argument("--tp", type=positive_int, default=1, metavar="N", help="tensor-parallel size (default 1)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")


def as_json(geom: KVGeometry) -> dict[str, Any]:
    """The contract shape: {"bytes_per_token", "breakdown"}."""
    return {"bytes_per_token": geom.bytes_per_token, "breakdown": geom.breakdown()}


def as_text(geom: KVGeometry, source: str) -> str:
    b = geom.breakdown()
    lines = [f"{source}: {geom.num_layers} layers, KV dtype {geom.dtype} ({geom.dtype_bytes} B), TP {geom.tp}",
             f"bytes per token (layers that grow with every token): {geom.bytes_per_token:,}"]
    for kind in ("full_attention", "mla"):
        if kind in b:
            e = b[kind]
            lines.append(f"  {kind:<18} {e['layers']:>3} layer(s) x {e['bytes_per_token_per_layer']:,} B"
                         f" = {e['bytes_per_token']:,} B/token")
    if "sliding_attention" in b:
        e = b["sliding_attention"]
        lines.append(f"  {'sliding_attention':<18} {e['layers']:>3} layer(s) x {e['bytes_per_token_per_layer']:,} B,"
                     f" window {e['window']:,} tokens: at most {e['max_bytes_per_sequence']:,} B per sequence")
    for kind in ("linear_attention", "mamba"):
        if kind in b:
            e = b[kind]
            state = ("state not computable from the config" if e["state_bytes_per_sequence"] is None else
                     f"state {e['state_bytes_per_layer']:,} B each = {e['state_bytes_per_sequence']:,} B per sequence")
            lines.append(f"  {kind:<18} {e['layers']:>3} layers, constant {state}")
    if "no_cache" in b:
        lines.append(f"  {'no_cache':<18} {b['no_cache']['layers']:>3} layers (MLP only)")
    if "mtp" in b:
        e = b["mtp"]
        lines.append(f"  {'mtp (drafter)':<18} {e['layers']:>3} layer(s) x {e['bytes_per_token_per_layer']:,} B"
                     f" = {e['bytes_per_token']:,} B/token, not in bytes per token")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        geom = kv_geometry(load_config(args.config), dtype=args.dtype, tp=args.tp)
        text = dumps(as_json(geom), "kv") if args.format == "json" else as_text(geom, str(args.config))
    except InputError as e:  # ConfigError, every reader's error and a non-finite number: one line, exit 3
        return invalid(str(e))
    print(text)
    return EXIT_PASS
