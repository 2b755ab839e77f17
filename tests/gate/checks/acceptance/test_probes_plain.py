"""Plain must be plain (issue 37 item 6): a plan mix in a k = 0 band of the declared schedule is judged against
the baseline as plain decoding — not shown slower passes ("plain: k = 0 band"), slower fails naming the band and
the tax, anything else is inconclusive.

The schedule is the one `specgate tune --emit vllm` writes for tests/e2e/test_depth_varies.py's crafted records
(`[[1, 3, 3], [4, 5, 1], [6, 65536, 0]]`: k = 3 at batch 1-3, 1 at 4-5, 0 from 6), and the speculative record
carries it in its speculative config as `specgate probe --speculative-config` records vLLM's own JSON there.
Rates are test_comparison.py's (5 vs 5 fully separated: p = 1/252).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.evidence.intake import record_defects
from gate.evidence.probe_vetting import plain_only
from gate.evidence.probes import ProbeRecord
from gate.model.speedup.pays import Plain, decide_plain, smallest_p
from gate.status import Status
from tests.gate.checks.acceptance import judge
from tests.gate.checks.acceptance.test_comparison import BASE, FAST, SLOW, cell, record
from tests.gate.checks.acceptance.test_probes import plan

RANGES = [[1, 3, 3], [4, 5, 1], [6, 65536, 0]]
SCHEDULED = {"method": "ngram", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": RANGES}
SAME = [20.5, 21.5, 22.5, 23.5, 24.5]  # interleaved with BASE: no arm is shown faster or slower


def _files(tmp: Path, spec_points: dict[tuple[str, int], list[float]], *, speculative: dict[str, Any] | None = None,
           base_points: dict[tuple[str, int], list[float]] | None = None, failed: bool = False,
           length: float | None = 1.0) -> list[str]:
    base = record("baseline", base_points or {k: BASE[:len(v)] for k, v in spec_points.items()})
    # the band's cells carry the few drafts of the arrival steps (batch < 6, k > 0), accepted by nothing: L 1.0
    spec: ProbeRecord = record("speculative", spec_points, length=length)
    spec = spec.model_copy(update={"speculative": SCHEDULED if speculative is None else speculative})
    if failed:
        cells = list(spec.cells)
        c = cells[0]
        cells[0] = cell(c.mix, c.concurrency, c.repetition, c.served_tokens_per_second, failed=1, length=1.0)
        spec = spec.model_copy(update={"cells": cells})
    (tmp / "b.json").write_text(json.dumps(base.to_json()))
    (tmp / "s.json").write_text(json.dumps(spec.to_json()))
    return ["b.json", "s.json"]


def _plan(tmp: Path, mixes: list[tuple[str, int]], files: list[str], schedule: bool = True,
          min_speedup: float | None = None):
    spec = SCHEDULED if schedule else {"method": "ngram", "num_speculative_tokens": 3}
    # the builder's target (2.0) holds at the k = 3 and k = 1 bands; the k = 0 band is exempt (target_at_mix)
    return plan(tmp, mixes, files, engine={"kind": "vllm", "version": "0.32.0", "speculative": spec},
                min_speedup=min_speedup)


def test_the_floor_rule() -> None:
    assert smallest_p(5, 5) == 1 / 252 and smallest_p(3, 3) == 1 / 20 and smallest_p(0, 5) == 1.0
    assert decide_plain(0.004, 0.05, 5, 5) is Plain.TAXED
    assert decide_plain(0.5, 0.05, 5, 5) is Plain.FREE
    assert decide_plain(0.5, 0.05, 3, 3) is Plain.INCONCLUSIVE  # 3 vs 3 can never reach p < 0.05
    assert decide_plain(0.05, 0.05, 3, 3) is Plain.INCONCLUSIVE


def test_a_free_k0_band_passes_labelled_plain_where_it_was_no_speedup(tmp_path: Path) -> None:
    files = _files(tmp_path, {("chat", 8): SAME})
    r = judge(_plan(tmp_path, [("chat", 8)], files), "pre", [], [])
    probes = r.values["probes"]["mixes"]["chat"]
    assert probes["verdict"] == "plain_free" and probes["label"] == "plain: k = 0 band", probes
    assert "probes: plain: k = 0 band: mix chat at concurrency 8 is plain decoding (the schedule's batch 6+ k = 0 " \
           "of vllm num_speculative_tokens_per_batch_size), as fast as without speculation" in r.reason
    assert "ratio 1.02x (observed range 0.854-1.23)" in r.reason and "not shown slower (p = 0.726" in r.reason
    assert r.status is Status.PASS, r.reason
    # the same records judged as speculation (no schedule declared): "no speedup", inconclusive
    r2 = judge(_plan(tmp_path, [("chat", 8)], _files(tmp_path, {("chat", 8): SAME},
                                                      speculative={"method": "ngram", "num_speculative_tokens": 3}),
                     schedule=False), "pre", [], [])
    assert r2.values["probes"]["mixes"]["chat"]["verdict"] == "inconclusive"
    assert "no speedup and no slowdown" in r2.reason


def test_a_taxed_k0_band_fails_naming_the_band_and_the_tax(tmp_path: Path) -> None:
    files = _files(tmp_path, {("chat", 8): SLOW})
    r = judge(_plan(tmp_path, [("chat", 8)], files), "pre", [], [])
    assert r.status is Status.FAIL, r.reason
    mix = r.values["probes"]["mixes"]["chat"]
    assert mix["verdict"] == "plain_taxed", mix
    assert "batch 6+ k = 0" in r.reason and "slower than without speculation" in r.reason
    assert "served rate 12 vs 22 tok/s without speculation, ratio 0.545x (observed range 0.417-0.7)" in r.reason
    assert f"slower at p = {1 / 252:.3g} < 0.05" in r.reason
    assert mix["points"][0]["ratio"] == 12 / 22 and mix["points"][0]["p_slower"] == 1 / 252


def test_a_faster_k0_point_is_plain_too_and_min_speedup_does_not_apply(tmp_path: Path) -> None:
    files = _files(tmp_path, {("chat", 8): FAST})
    r = judge(_plan(tmp_path, [("chat", 8)], files, min_speedup=2.0), "pre", [], [])
    assert r.values["probes"]["mixes"]["chat"]["verdict"] == "plain_free", r.reason


def test_a_record_at_a_fixed_k_is_no_evidence_of_the_band(tmp_path: Path) -> None:
    for spec, words in (({"method": "ngram", "num_speculative_tokens": 3}, "records no depth schedule"),
                        ({**SCHEDULED, "num_speculative_tokens_per_batch_size": [[1, 65536, 3]]},
                         "runs k = 3 at concurrency 8")):
        r = judge(_plan(tmp_path, [("chat", 8)], _files(tmp_path, {("chat", 8): SLOW}, speculative=spec)), "pre",
                  [], [])
        assert r.values["probes"]["mixes"]["chat"]["verdict"] == "inconclusive", r.reason
        assert words in r.reason and "plain decoding" in r.reason
        assert "slower than without" not in r.reason  # never blamed on the band it did not measure


def test_too_few_repetitions_or_a_failed_request_is_inconclusive_never_free(tmp_path: Path) -> None:
    r = judge(_plan(tmp_path, [("chat", 8)], _files(tmp_path, {("chat", 8): SAME[:3]})), "pre", [], [])
    assert r.values["probes"]["mixes"]["chat"]["verdict"] == "inconclusive", r.reason
    assert "cannot show a tax (the smallest p is 0.05, not < 0.05)" in r.reason
    r = judge(_plan(tmp_path, [("chat", 8)], _files(tmp_path, {("chat", 8): SAME}, failed=True)), "pre", [], [])
    assert r.values["probes"]["mixes"]["chat"]["verdict"] == "inconclusive", r.reason
    assert "failed request" in r.reason


def test_between_two_points_only_inside_the_band(tmp_path: Path) -> None:
    files = _files(tmp_path, {("chat", 4): SAME, ("chat", 6): SAME, ("chat", 8): SAME})
    r = judge(_plan(tmp_path, [("chat", 7)], files), "pre", [], [])
    assert r.values["probes"]["mixes"]["chat"]["verdict"] == "plain_free", r.reason
    assert [p["concurrency"] for p in r.values["probes"]["mixes"]["chat"]["points"]] == [6, 8]
    files = _files(tmp_path, {("chat", 4): SAME, ("chat", 8): SAME})
    r = judge(_plan(tmp_path, [("chat", 6)], files), "pre", [], [])  # 4 runs k = 1: outside the band
    assert r.values["probes"]["mixes"]["chat"]["verdict"] == "inconclusive", r.reason
    assert "not measured at 6 nor between two measured concurrencies of the band (measured: 4, 8)" in r.reason


def test_a_speculating_mix_of_the_same_plan_keeps_the_speculation_rule(tmp_path: Path) -> None:
    files = _files(tmp_path, {("chat", 1): FAST, ("chat", 8): SAME})
    r = judge(_plan(tmp_path, [("chat", 1)], files), "pre", [], [])
    assert r.values["probes"]["mixes"]["chat"]["verdict"] == "pays", r.reason


def test_a_record_measured_only_in_its_k0_band_needs_no_acceptance_length(tmp_path: Path) -> None:
    # a record whose schedule ran k = 0 at every measured concurrency measured plain decoding: no L is right there
    files = _files(tmp_path, {("chat", 8): SAME, ("chat", 16): SAME}, length=None)
    spec = ProbeRecord.model_validate_json((tmp_path / "s.json").read_text())
    assert plain_only(spec) and record_defects(spec) == []
    r = judge(_plan(tmp_path, [("chat", 8)], files), "pre", [], [])
    assert r.status is Status.PASS, r.reason
    assert r.values["probes"]["mixes"]["chat"]["verdict"] == "plain_free"


@pytest.mark.parametrize("points, speculative, why", [
    ({("chat", 1): SAME, ("chat", 8): SAME}, SCHEDULED, "a cell at batch 1, where it runs k = 3"),
    ({("chat", 8): SAME}, {"method": "ngram", "num_speculative_tokens": 3}, "no schedule: a fixed k = 3"),
    ({("chat", 8): SAME}, {**SCHEDULED, "num_speculative_tokens_per_batch_size": [[1, 65536, 3]]}, "k = 3 at 8"),
    ({("chat", 8): SAME}, {**SCHEDULED, "num_speculative_tokens_per_batch_size": [[1, 65536, 0]]},
     "k = 0 everywhere: a schedule vLLM's rule refuses"),
    ({("chat", 8): SAME}, None, "open loop: its batch is not declared"),
])
def test_any_other_speculative_record_without_acceptance_is_still_refused(
        points: dict[tuple[str, int], list[float]], speculative: dict[str, Any] | None, why: str) -> None:
    spec = record("speculative", points, length=None)
    if speculative is None:  # the k = 0 band's record, its cells sent open loop at 2 requests/s
        cells = [c.model_copy(update={"request_rate": 2.0}) for c in spec.cells]
        spec = spec.model_copy(update={"speculative": SCHEDULED, "cells": cells})
    else:
        spec = spec.model_copy(update={"speculative": speculative})
    assert not plain_only(spec), why
    assert ("not applicable: the speculative record measured no speculation: no cell has an acceptance length"
            in record_defects(spec)), why
    spec = spec.model_copy(update={"engine": "foo"})
    assert not plain_only(spec)  # an engine of no profile: its schedule cannot be read
