"""Strict output (issue 21, item 8): no NaN/Infinity in any JSON the gate writes (check, tune, compare, probe
records: one line, exit 3 instead), and names from inputs printable in text tables (a line break in a mix
name cannot forge a row)."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest

from gate.checks.acceptance.comparison import Comparison
from gate.commands.compare import as_text
from gate.inputs.jsontext import dumps, printable
from gate.model.speedup.pays import Verdict
from gate.model.speedup.point import PointResult
from gate.plan.model import load_plan
from gate.status import InputError, LineResult, Status
from gate.verdict.evaluate import evaluate
from gate.verdict.report import render
from tests.gate.helpers import PLANS


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_dumps_refuses_non_finite_numbers_naming_the_path(bad: float) -> None:
    with pytest.raises(InputError, match=r"\$\.checks\.acceptance\.values\.speedup\[1\]"):
        dumps({"checks": {"acceptance": {"values": {"speedup": [1.0, bad]}}}}, "check report")
    assert dumps({"a": [1.5, None, "x"]}, "x", indent=None) == '{"a": [1.5, null, "x"]}'


def _with_value(value: Any) -> Any:
    v = evaluate(load_plan(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml"))
    acc = v.checks["acceptance"]
    checks = dict(v.checks)
    checks["acceptance"] = LineResult(acc.status, acc.reason, {**acc.values, "injected": value})
    return dataclasses.replace(v, checks=checks)


def test_check_json_never_holds_nan() -> None:
    with pytest.raises(InputError, match="not finite"):
        render(_with_value(math.nan), "json")
    doc = render(_with_value(1.0), "json")  # the control
    json.loads(doc, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


def test_probe_record_dump_never_holds_nan() -> None:
    from gate.evidence.probes import ProbeRecord
    from gate.probe.record import dump

    rec = ProbeRecord.model_validate({
        "schema": "specgate.probe/1", "arm": "baseline", "engine": "vllm", "speculative": None,
        "cells": [{"mix": "m", "concurrency": 1, "repetition": 1, "requests": 4, "output_tokens": 100,
                   "wall_seconds": 1.0, "served_tokens_per_second": 100.0, "failed_requests": 0,
                   "ttft_seconds": {}, "tpot_seconds": {}, "chunk_gap_seconds": {}}]})
    cell = rec.cells[0].model_copy(update={"served_tokens_per_second": math.inf})
    with pytest.raises(InputError, match="probe record"):
        dump(rec.model_copy(update={"cells": [cell]}))
    json.loads(dump(rec), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


def _point(mix: str) -> PointResult:
    return PointResult(mix, 4, Verdict.PAYS, f"{mix} at concurrency 4 pays: speedup 1.5x", speedup=1.5,
                       speedup_low=1.4, speedup_high=1.6, p_value=0.001, test_method="exact",
                       baseline_tokens_per_second=100.0, speculative_tokens_per_second=150.0)


@pytest.mark.parametrize("name", ["chat\nforged                 1   100.0  900.0  9.0  pays",
                                  "chat\r\nforged", "chat\x1b[2K\rforged", "chat\u2028forged", "chat\x00forged"])
def test_mix_names_cannot_forge_rows_in_compare_text(name: str) -> None:
    text = as_text(Comparison((_point(name),), {name: None}, {name: None}, 0.05, None))
    lines = text.split("\n")
    assert not any(line.startswith("forged") for line in lines)
    assert all(line.isprintable() for line in lines)
    assert sum(1 for line in lines if "chat" in line) == 3  # the row, the crossover line, the reason


def test_normal_approximation_is_named_in_compare_text() -> None:
    p = dataclasses.replace(_point("chat"), test_method="normal")
    text = as_text(Comparison((p,), {"chat": None}, {"chat": None}, 0.05, None))
    assert "normal approximation with tie correction at chat at 4" in text
    assert "exact Mann-Whitney" in as_text(Comparison((_point("chat"),), {"chat": None}, {"chat": None}, 0.05, None))


def test_check_text_shows_names_printably() -> None:
    v = evaluate(load_plan(PLANS / "seed004-qwen3.6-35b-a3b-mtp.yaml"))
    checks = dict(v.checks)
    r = checks["acceptance"]
    checks["acceptance"] = LineResult(r.status, r.reason + " mix \x1b[31mred\r\nforged", r.values)
    v = dataclasses.replace(v, checks=checks, plan_name="p\nforged")
    for fmt in ("text", "markdown"):
        out = render(v, fmt)
        assert all(line.isprintable() for line in out.splitlines()), fmt
        assert not any(line.startswith("forged") for line in out.splitlines()), fmt


def test_printable_keeps_ordinary_text() -> None:
    s = "target L 2 ≥ L* 1.5 — 2K, 131,072 tokens (μ)"
    assert printable(s) is s
    assert printable("a\nb\tc") == "a\\nb\\tc"


def test_status_is_unchanged_by_rendering() -> None:
    assert Status.PASS.value == "pass"
