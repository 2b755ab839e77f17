"""Artifact bytes and tensor lookup from hand-written safetensors files (the format, without torch)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from gate.inputs.weights import artifact_bytes, has_tensor, read_safetensors_header
from gate.model.config import ConfigError


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> int:
    """Write a real safetensors file: 8-byte LE header length, JSON header, then the data bytes.

    tensors: name -> (dtype, shape, bytes per element). Returns the data byte count.
    """
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, elem) in tensors.items():
        n = elem
        for dim in shape:
            n *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the format pads the header to 8 bytes
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return offset


def test_index_total_size_wins(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "model-00001-of-00001.safetensors", {"w": ("BF16", [4, 4], 2)})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 123_456}, "weight_map": {"w": "model-00001-of-00001.safetensors"}}))
    size = artifact_bytes(tmp_path)
    assert size is not None and size.bytes == 123_456 and size.source == "index"


def test_shard_headers_sum_data_offsets(tmp_path: Path) -> None:
    # Shard 1: embed 512 × 64 BF16 = 65,536 B + norm 64 F32 = 256 B; shard 2: d2t 32,000 I64 = 256,000 B.
    a = write_safetensors(tmp_path / "model-00001-of-00002.safetensors",
                          {"model.embed_tokens.weight": ("BF16", [512, 64], 2), "model.norm.weight": ("F32", [64], 4)})
    b = write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"d2t": ("I64", [32_000], 8)})
    assert (a, b) == (65_536 + 256, 256_000)
    size = artifact_bytes(tmp_path)
    assert size is not None and size.bytes == 65_792 + 256_000 and size.source == "headers"
    # A single file works too.
    one = artifact_bytes(tmp_path / "model-00002-of-00002.safetensors")
    assert one is not None and one.bytes == 256_000


def test_header_is_read_without_tensor_data(tmp_path: Path) -> None:
    # A file truncated right after its header still yields sizes: only the header is read.
    f = tmp_path / "big.safetensors"
    write_safetensors(f, {"w": ("BF16", [1024, 1024], 2)})
    (n,) = struct.unpack("<Q", f.read_bytes()[:8])
    f.write_bytes(f.read_bytes()[: 8 + n])
    assert artifact_bytes(f).bytes == 2 * 1024 * 1024  # type: ignore[union-attr]
    assert read_safetensors_header(f)["w"]["shape"] == [1024, 1024]


def test_declared_then_parameters() -> None:
    assert artifact_bytes(declared_bytes=42).source == "declared"  # type: ignore[union-attr]
    # Seed 002: Ling-3.0-flash-dspark, 1,363,707,905 parameters in BF16 → × 2 B.
    ling = artifact_bytes(parameter_count=1_363_707_905, dtype="bfloat16")
    assert ling is not None and ling.bytes == 2_727_415_810 and ling.source == "parameters"
    assert artifact_bytes() is None


def test_directory_without_weights_falls_back(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    size = artifact_bytes(tmp_path, declared_bytes=7)
    assert size is not None and size.source == "declared"


def test_has_tensor(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "model.safetensors", {"d2t": ("I64", [8], 8), "t2d": ("BOOL", [16], 1)})
    assert has_tensor(tmp_path, "d2t") is True
    assert has_tensor(tmp_path, "lm_head.weight") is False
    other = tmp_path / "other"
    other.mkdir()
    write_safetensors(other / "model.safetensors", {"model.fc.weight": ("BF16", [2, 2], 2)})
    assert has_tensor(other, "d2t") is False
    # Prefixed names count (model.d2t), and the index's weight_map is used when present.
    idx = tmp_path / "idx"
    idx.mkdir()
    (idx / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 1}, "weight_map": {"model.d2t": "a.safetensors"}}))
    assert has_tensor(idx, "d2t") is True
    # No weights at all: unknown, not False.
    assert has_tensor(None, "d2t") is None
    assert has_tensor(tmp_path / "nowhere", "d2t") is None
    empty = tmp_path / "empty"
    empty.mkdir()
    assert has_tensor(empty, "d2t") is None


def test_corrupt_files_give_one_line_errors(tmp_path: Path) -> None:
    short = tmp_path / "short.safetensors"
    short.write_bytes(b"\x01\x02")
    with pytest.raises(ConfigError, match="too short"):
        artifact_bytes(short)
    lying = tmp_path / "lying.safetensors"
    lying.write_bytes(struct.pack("<Q", 500) + b"{}")
    with pytest.raises(ConfigError, match="ends inside"):
        artifact_bytes(lying)
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(struct.pack("<Q", 4) + b"{{{{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        artifact_bytes(garbage)
    with pytest.raises(ConfigError, match="not found"):
        artifact_bytes(tmp_path / "missing")
