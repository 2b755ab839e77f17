"""Artifact bytes and tensor presence from safetensors metadata, never from tensor data.

Why here: the artifacts budget line needs the bytes of each download, and the co-design
check needs to know whether a drafter ships a `d2t` draft-vocabulary mapping. Both can be
answered from `model.safetensors.index.json` or the shard headers (an 8-byte
little-endian length followed by a JSON header), so nothing large is ever read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.inputs.loading import CONFIG_LIMITS, InputError, check_regular, load_json, parse_json
from gate.model.config import ConfigError
from gate.model.dtypes import DTYPE_BYTES, canonical_dtype

INDEX_NAME = "model.safetensors.index.json"
MAX_HEADER_BYTES = 100 * 1024 * 1024  # safetensors' own limit on the JSON header


@dataclass(frozen=True)
class WeightsSize:
    """Bytes of one artifact and how they were found (index | headers | declared | parameters)."""

    bytes: int
    source: str
    detail: str


def read_safetensors_header(path: str | Path) -> dict[str, Any]:
    """The JSON header of one .safetensors file (reads 8 + header-length bytes only)."""
    p = Path(path)
    try:
        check_regular(p, "safetensors file")  # a FIFO would block open() forever
    except InputError as e:
        raise ConfigError(str(e)) from None
    try:
        with p.open("rb") as f:
            raw_len = f.read(8)
            if len(raw_len) < 8:
                raise ConfigError(f"{p} is too short to be a safetensors file")
            (n,) = struct.unpack("<Q", raw_len)
            if n > MAX_HEADER_BYTES:
                raise ConfigError(f"{p} declares a {n}-byte header (over the safetensors limit)")
            raw = f.read(n)
    except OSError as e:
        raise ConfigError(f"cannot read {p}: {e.strerror or e}") from None
    if len(raw) < n:
        raise ConfigError(f"{p} ends inside its safetensors header")
    try:
        header = parse_json(raw.decode("utf-8"), f"{p} safetensors header", CONFIG_LIMITS)
    except (UnicodeDecodeError, InputError):
        raise ConfigError(f"{p} has a safetensors header that is not valid JSON") from None
    if not isinstance(header, dict):
        raise ConfigError(f"{p} has a safetensors header that is not a JSON object")
    return header


def _tensor_bytes(header: dict[str, Any], where: Path) -> int:
    total = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(x, int) for x in offsets) or offsets[1] < offsets[0]):
            raise ConfigError(f"{where}: tensor {name!r} has no valid data_offsets")
        total += offsets[1] - offsets[0]
    return total


def _index(path: Path) -> dict[str, Any] | None:
    f = path / INDEX_NAME if path.is_dir() else path
    if not (f.is_file() and f.name.endswith(".index.json")):
        return None
    try:
        data = load_json(f, "safetensors index", CONFIG_LIMITS)
    except InputError as e:
        raise ConfigError(f"{f} is not a readable JSON index ({e})") from None
    return data if isinstance(data, dict) else None


def _shards(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(path.glob("*.safetensors"))
    return [path] if path.is_file() and path.suffix == ".safetensors" else []


def artifact_bytes(path: str | Path | None = None, *, declared_bytes: int | None = None,
                   parameter_count: int | None = None, dtype: str | None = None) -> WeightsSize | None:
    """Bytes of one model artifact, by the first method that has data.

    1. `model.safetensors.index.json` `metadata.total_size`; 2. the shard headers (sum of
    `data_offsets` lengths); 3. a declared byte count; 4. parameter count × dtype bytes
    (Ling DSpark: 1,363,707,905 × 2 = 2,727,415,810). None when nothing is known.
    """
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"weights path not found: {p}")
        index = _index(p)
        metadata = index.get("metadata") if index else None
        total = metadata.get("total_size") if isinstance(metadata, dict) else None
        if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
            return WeightsSize(total, "index", f"{INDEX_NAME} metadata.total_size")
        shards = _shards(p)
        if shards:
            total_bytes = sum(_tensor_bytes(read_safetensors_header(s), s) for s in shards)
            return WeightsSize(total_bytes, "headers",
                               f"sum of tensor data_offsets in {len(shards)} safetensors header(s)")
    if declared_bytes is not None:
        if declared_bytes < 0:
            raise ConfigError(f"declared weights bytes must not be negative, got {declared_bytes}")
        return WeightsSize(int(declared_bytes), "declared", "declared byte count")
    if parameter_count is not None:
        if parameter_count < 0:
            raise ConfigError(f"parameter count must not be negative, got {parameter_count}")
        name = canonical_dtype(dtype or "bf16")
        b = DTYPE_BYTES[name]
        return WeightsSize(parameter_count * b, "parameters", f"{parameter_count} parameters × {b} B ({name})")
    return None


def _name_matches(tensor: str, name: str) -> bool:
    return tensor == name or tensor.endswith("." + name)


def has_tensor(path_or_dir: str | Path | None, name: str) -> bool | None:
    """Whether the weights hold a tensor `name` (or `<prefix>.name`); None when no weights are readable.

    Looks in the index's `weight_map` first, then in the shard headers.
    """
    if path_or_dir is None:
        return None
    p = Path(path_or_dir)
    if not p.exists():
        return None
    index = _index(p)
    weight_map = (index or {}).get("weight_map")
    if isinstance(weight_map, dict) and weight_map:
        return any(_name_matches(t, name) for t in weight_map)
    shards = _shards(p)
    if not shards:
        return None
    for s in shards:
        header = read_safetensors_header(s)
        if any(_name_matches(t, name) for t in header if t != "__metadata__"):
            return True
    return False
