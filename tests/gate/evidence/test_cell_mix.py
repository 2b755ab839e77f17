"""Each probe cell consistent with its mix (issue 34 item 1, plausibility; gate.model.plausibility.cell_mix).

The example of the issue: speculative cells of 20,000-token prompts and 3-token outputs under a 128/64 mix paid.
Here they are refused with a named reason, in-process and through `specgate compare` (exit 3, one line). Other
numbers show each tolerance's edge. Controls: the real records of tests/docs/getting_started (vLLM 0.32, written
by `specgate probe`) and tests/fixtures/tune-emit, and the vllm-bench and guidellm fixtures imported, read clean.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.evidence.probe_vetting import pair_defects, record_defects
from gate.evidence.probes import MixSpec, ProbeRecord, load_record
from gate.model import plausibility as pl
from gate.probe.importers import ImportSettings, import_files
from tests.gate.checks.acceptance.test_comparison import BASE, FAST, record

ROOT = Path(__file__).resolve().parents[3]
REAL = [ROOT / "tests/docs/getting_started/base.json", ROOT / "tests/docs/getting_started/spec.json",
        *sorted((ROOT / "tests/fixtures/tune-emit").glob("*.json"))]


def _shaped(rec: ProbeRecord, prompt: int | None, output: int, prompts_from: str = "engine_tokenizer") -> ProbeRecord:
    """`rec` (8 requests a cell, 256/512 tokens each) under a mix that declares `prompt`/`output` tokens."""
    mixes = [MixSpec(name=m.name, prompt_tokens=prompt, output_tokens=output, prompts_from=prompts_from)
             for m in rec.workload]
    return rec.model_copy(update={"workload": mixes})


def _cells(rec: ProbeRecord, output: int, prompt: int | None, **update: Any) -> ProbeRecord:
    """Every cell given `output` and `prompt` tokens in all (each keeps its own rate: wall = output / rate)."""
    return rec.model_copy(update={"cells": [c.model_copy(update={
        "output_tokens": output, "prompt_tokens": prompt, "wall_seconds": output / c.served_tokens_per_second,
        **update}) for c in rec.cells]})


def _issue_example() -> tuple[ProbeRecord, ProbeRecord]:
    """A 128/64 mix; the speculative arm's 8 requests a cell got 20,000-token prompts and 3 output tokens each."""
    base = _cells(_shaped(record("baseline", {("chat", 1): BASE}), 128, 64), 8 * 64, 8 * 128)
    spec = _cells(_shaped(record("speculative", {("chat", 1): FAST}), 128, 64), 8 * 3, 8 * 20_000)
    return base, spec


def test_the_issues_example_is_refused() -> None:
    base, spec = _issue_example()
    assert record_defects(base) == []
    (d,) = record_defects(spec)
    assert d.startswith("not possible: ") and "24 output tokens for 8 completed requests = 3 per request, not the " \
        "mix's 64" in d, d
    # the output alone right: the prompt is still 20,000 tokens, not 128
    spec = _cells(spec, 8 * 64, 8 * 20_000)
    (d,) = record_defects(spec)
    assert "160000 prompt tokens for 8 completed requests = 20000 per request, not the mix's 128 within 8 tokens" \
        in d, d


def test_the_issues_example_through_compare_is_one_line_exit_3(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    base, spec = _issue_example()
    (tmp_path / "b.json").write_text(json.dumps(base.to_json()))
    (tmp_path / "s.json").write_text(json.dumps(spec.to_json()))
    assert main(["compare", str(tmp_path / "b.json"), str(tmp_path / "s.json")]) == 3
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not the mix's 64" in err and "Traceback" not in err, err


@pytest.mark.parametrize("prompt_per_request, ok", [
    (256 + 8, True), (256 - 8, True), (256 + 9, False), (256 - 9, False), (1, False)])
def test_prompt_slack_a_few_tokens(prompt_per_request: int, ok: bool) -> None:
    spec = _cells(record("speculative", {("chat", 1): FAST}), 8 * 512, 8 * prompt_per_request)
    assert (record_defects(spec) == []) is ok


def test_prompt_slack_is_a_share_of_a_long_prompt() -> None:
    # 20,000-token prompts: 1 % = 200 tokens of slack; 201 off is another prompt
    assert pl.cell_mix(requests=4, failed=0, output_tokens=4 * 64, prompt_tokens=4 * 20_200, mix_output=64,
                       mix_prompt=20_000, prompts_from="engine_tokenizer") is None
    bad = pl.cell_mix(requests=4, failed=0, output_tokens=4 * 64, prompt_tokens=4 * 20_201, mix_output=64,
                      mix_prompt=20_000, prompts_from="engine_tokenizer")
    assert bad is not None and "within 200 tokens" in bad.reason


@pytest.mark.parametrize("per_request, ok", [(128, True), (256, True), (1024, True), (1025, False), (127, False)])
def test_approximate_words_are_half_to_four_tokens_each(per_request: int, ok: bool) -> None:
    found = pl.cell_mix(requests=2, failed=0, output_tokens=2 * 64, prompt_tokens=2 * per_request, mix_output=64,
                        mix_prompt=256, prompts_from="approximate_words")
    assert (found is None) is ok, found


def test_output_is_exact_where_the_probe_wrote_it() -> None:
    # ignore_eos: each completed request got exactly the mix's output tokens; one token short is another mix
    spec = _cells(record("speculative", {("chat", 1): FAST}), 8 * 512 - 1, 8 * 256)
    (d,) = record_defects(spec)
    assert "4095 output tokens for 8 completed requests = 511.875 per request, not the mix's 512" in d
    # a failed request got none: 7 completed, 7 x 512
    ok = _cells(record("speculative", {("chat", 1): FAST}), 7 * 512, 7 * 256, failed_requests=1)
    assert record_defects(ok) == []


@pytest.mark.parametrize("per_request, ok", [(64, True), (58, True), (57, False), (65, False), (3, False)])
def test_an_imported_run_holds_nine_tenths_of_its_mix(per_request: int, ok: bool) -> None:
    found = pl.cell_mix(requests=10, failed=0, output_tokens=10 * per_request, prompt_tokens=None, mix_output=64,
                        mix_prompt=None, prompts_from="vllm-bench:unknown")
    assert (found is None) is ok, found


def test_no_prompt_count_under_a_declared_prompt_is_not_the_mix() -> None:
    spec = _cells(record("speculative", {("chat", 1): FAST}), 8 * 512, None)
    (d,) = record_defects(spec)
    assert "no prompt token count for 8 completed requests under a mix of 256-token prompts" in d
    # the user's own prompts declare no length: nothing to hold the count to
    own = _shaped(spec, None, 512, "jsonl:prompts.jsonl")
    assert record_defects(own) == []


def test_no_completed_request_holds_no_tokens() -> None:
    assert pl.cell_mix(requests=4, failed=4, output_tokens=0, prompt_tokens=None, mix_output=64, mix_prompt=32,
                       prompts_from="engine_tokenizer") is None
    bad = pl.cell_mix(requests=4, failed=4, output_tokens=5, prompt_tokens=None, mix_output=64, mix_prompt=32,
                      prompts_from="engine_tokenizer")
    assert bad is not None and "5 output tokens from no completed request" in bad.reason


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_records_are_consistent_with_their_mixes(path: Path) -> None:
    assert record_defects(load_record(path)) == []


def test_real_getting_started_pair_has_no_defects() -> None:
    base, spec = (load_record(p) for p in REAL[:2])
    found = [d for d in pair_defects(base, spec, time.time()) if "per request" in d]
    assert found == []


@pytest.mark.parametrize("tool, files", [
    ("vllm-bench", ["tests/fixtures/probe/vllm-0.32.0-bench-serve-c1.json",
                    "tests/fixtures/probe/vllm-0.32.0-bench-serve-c8.json"]),
    ("guidellm", ["tests/fixtures/guidellm/guidellm-0.8.1-synchronous.json"]),
])
def test_real_imports_are_consistent_with_their_mixes(tool: str, files: list[str]) -> None:
    settings = ImportSettings(arm="baseline", engine="vllm", engine_version="0.32.0", temperature=0.0)
    rec = import_files(tool, [ROOT / f for f in files], settings)
    assert [d for d in record_defects(rec) if "per request" in d or "prompt token" in d] == []
