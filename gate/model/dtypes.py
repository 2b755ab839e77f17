"""Bytes per element of the dtypes a KV cache or a checkpoint uses.

Why its own module: the KV geometry (bytes per token), the weights (parameters × dtype
bytes) and the plan's `kv_dtype` must agree on one table and one canonical spelling
(`bf16 | fp16 | fp8 | fp32`), whatever name a config or a flag uses.
"""

from __future__ import annotations

from gate.model.config import ConfigError

# Bytes per element of a KV (or model) dtype, by our short names and Hugging Face's torch_dtype names.
DTYPE_BYTES: dict[str, int] = {
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "fp32": 4,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float32": 4,
    "float": 4,
    "float8": 1,
    "float8_e4m3fn": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2": 1,
    "float8_e5m2fnuz": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}

_CANONICAL = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}


def canonical_dtype(name: str) -> str:
    """`bf16 | fp16 | fp8 | fp32` for any name DTYPE_BYTES knows (torch. prefix allowed)."""
    key = str(name).strip().lower().removeprefix("torch.")
    if key not in DTYPE_BYTES:
        raise ConfigError(f"unknown dtype {name!r} (known: bf16, fp16, fp8, fp32 and torch_dtype names)")
    if key.startswith(("float8", "fp8")):
        return "fp8"
    return _CANONICAL.get(key, key)
