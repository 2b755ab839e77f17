"""gate.bill.facts: the artifact facts are read once, below the lines; the co-design line's `d2t` tensor
fact is one of them (issue 20: the checks read no files)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from gate.bill.facts import model_facts
from gate.plan.model import ModelRef, PlanError, Weights


def _safetensors(path: Path, names: list[str]) -> None:
    header = {n: {"dtype": "I64", "shape": [1], "data_offsets": [8 * i, 8 * i + 8]} for i, n in enumerate(names)}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 8 * len(names))


def test_the_drafter_d2t_tensor_is_an_artifact_fact(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.safetensors", tmp_path / "bad.safetensors"
    _safetensors(good, ["d2t", "fc.weight"])
    _safetensors(bad, ["fc.weight"])
    facts = model_facts(ModelRef(weights=Weights(path=good)), "drafter")
    assert facts is not None and facts.d2t_tensor is True and facts.weights_bytes == 16
    facts = model_facts(ModelRef(weights=Weights(path=bad)), "drafter")
    assert facts is not None and facts.d2t_tensor is False


def test_no_d2t_fact_without_drafter_weights(tmp_path: Path) -> None:
    target = tmp_path / "t.safetensors"
    _safetensors(target, ["d2t"])
    facts = model_facts(ModelRef(weights=Weights(path=target)), "target")
    assert facts is not None and facts.d2t_tensor is None  # only a drafter maps its vocabulary
    facts = model_facts(ModelRef(weights=Weights(bytes=10)), "drafter")
    assert facts is not None and facts.d2t_tensor is None


def test_an_unreadable_drafter_header_is_invalid_input(tmp_path: Path) -> None:
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x01")
    with pytest.raises(PlanError, match="drafter.weights"):
        model_facts(ModelRef(weights=Weights(path=broken)), "drafter")
