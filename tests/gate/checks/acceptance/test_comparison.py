"""gate.checks.acceptance.comparison and `specgate compare` on synthetic probe records with known speedups.

Every record here is built in the test (no engine): served rates per repetition are chosen so
that the expected speedup, range and exact p-value can be computed by hand:
- 5 vs 5 with every speculative repetition above every baseline one: p = 1/C(10,5) = 1/252.
- 3 vs 3 likewise: p = 1/20 = 0.05, which is not < 0.05 (seed 000: three observations do not
  establish significance).
- interleaved 5 vs 5 (21,23,25,27,29 vs 20,22,24,26,28): U = 15, 87 of the 252 splits have
  U >= 15 (counted by enumeration in tests/gate/test_stats.py's brute force): p = 87/252.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gate.checks.acceptance.comparison import CompareError, compare, judge_point
from gate.cli import main
from gate.evidence.probes import Cell, MixSpec, ProbeRecord, Quantiles
from gate.model.speedup.pays import Verdict
from gate.stats import crossover

TOKENS = 512  # the mix's output tokens per request
PROMPT = 256  # the mix's prompt tokens per request
REQUESTS = 8  # per cell


def cell(mix: str, conc: int, rep: int, rate: float, *, tpot: float | None = 0.02, length: float | None = None,
         failed: int = 0, reset: bool = False) -> Cell:
    """One cell consistent with its 256/512 mix (plausibility.cell_mix): each completed request got the mix's tokens."""
    done = REQUESTS - failed
    return Cell(mix=mix, concurrency=conc, repetition=rep, requests=REQUESTS, output_tokens=done * TOKENS,
                prompt_tokens=done * PROMPT if done else None,
                wall_seconds=done * TOKENS / rate, served_tokens_per_second=rate, failed_requests=failed,
                ttft_seconds=Quantiles(p50=0.01, p90=0.02, p99=0.03), tpot_seconds=Quantiles(p50=tpot),
                chunk_gap_seconds=Quantiles(), acceptance_length=length, metrics_reset=reset)


def now_iso(offset_seconds: float = 0.0) -> str:
    return (datetime.now(UTC) + timedelta(seconds=offset_seconds)).isoformat(timespec="seconds")


def record(arm: str, points: dict[tuple[str, int], list[float]], **kw: Any) -> ProbeRecord:
    """A complete record as `specgate probe` writes it: engine, build, model, each mix's shape, the date, and
    the speculative arm's settings and acceptance (L 2.0 per cell unless `length` is given)."""
    if arm == "speculative":
        kw.setdefault("length", 2.0)
    cells = [cell(m, c, i + 1, r, **kw) for (m, c), rates in points.items() for i, r in enumerate(rates)]
    mixes = [MixSpec(name=m, prompt_tokens=PROMPT, output_tokens=TOKENS, prompts_from="engine_tokenizer")
             for m in dict.fromkeys(m for m, _ in points)]
    return ProbeRecord(arm=arm, engine="vllm", engine_version="0.32.0", model="m",
                       speculative={"method": "ngram", "num_speculative_tokens": 3} if arm == "speculative" else None,
                       workload=mixes, repetitions=max(len(v) for v in points.values()), created_at=now_iso(),
                       cells=cells)


BASE = [20.0, 21.0, 22.0, 23.0, 24.0]
FAST = [30.0, 31.0, 32.0, 33.0, 34.0]
SLOW = [10.0, 11.0, 12.0, 13.0, 14.0]


def test_significantly_faster_pays_with_exact_p_and_observed_range() -> None:
    p = judge_point("chat", 1, record("baseline", {("chat", 1): BASE}).cells,
                    record("speculative", {("chat", 1): FAST}).cells)
    assert p.verdict is Verdict.PAYS
    assert p.speedup == pytest.approx(32 / 22)
    assert (p.speedup_low, p.speedup_high) == (pytest.approx(30 / 24), pytest.approx(34 / 20))
    assert p.interval_kind == "observed_range"
    assert p.p_value == pytest.approx(1 / 252, abs=1e-15)
    assert p.p_slower == 1.0
    assert "32 tok/s vs baseline 22 tok/s" in p.reason


def test_significantly_slower_does_not_pay() -> None:
    p = judge_point("chat", 4, record("baseline", {("chat", 4): BASE}).cells,
                    record("speculative", {("chat", 4): SLOW}).cells)
    assert p.verdict is Verdict.DOES_NOT_PAY
    assert p.speedup == pytest.approx(12 / 22)
    assert p.p_value == pytest.approx(1 / 252, abs=1e-15)
    assert "slower at p = 0.00397" in p.reason


def test_three_against_three_is_never_significant_at_005() -> None:
    p = judge_point("chat", 1, record("baseline", {("chat", 1): BASE[:3]}).cells,
                    record("speculative", {("chat", 1): FAST[:3]}).cells)
    assert p.p_value == pytest.approx(0.05, abs=1e-15)
    assert p.verdict is Verdict.INCONCLUSIVE
    assert "no speedup" in p.reason


def test_interleaved_arms_are_inconclusive() -> None:
    p = judge_point("chat", 1, record("baseline", {("chat", 1): [20, 22, 24, 26, 28]}).cells,
                    record("speculative", {("chat", 1): [21, 23, 25, 27, 29]}).cells)
    assert p.verdict is Verdict.INCONCLUSIVE
    assert p.p_value == pytest.approx(87 / 252, abs=1e-15)
    assert p.speedup == pytest.approx(25 / 24)


def test_min_speedup_turns_a_small_significant_win_into_does_not_pay() -> None:
    base, spec = record("baseline", {("chat", 1): BASE}), record("speculative", {("chat", 1): FAST})
    assert compare(base, spec, min_speedup=1.45).points[0].verdict is Verdict.PAYS  # 1.4545 >= 1.45
    p = compare(base, spec, min_speedup=1.5).points[0]
    assert p.verdict is Verdict.DOES_NOT_PAY
    assert "below min_speedup 1.5" in p.reason


def test_break_even_from_tpot_and_acceptance() -> None:
    # L* = L x TPOT_spec / TPOT_base = 2.5 x 0.03 / 0.04 = 1.875
    p = judge_point("chat", 1, record("baseline", {("chat", 1): BASE}, tpot=0.04).cells,
                    record("speculative", {("chat", 1): FAST}, tpot=0.03, length=2.5).cells)
    assert p.acceptance_length == 2.5
    assert p.break_even_acceptance_length == pytest.approx(1.875)
    # no acceptance in the baseline-style record: L* unknown, not 0
    q = judge_point("chat", 1, record("baseline", {("chat", 1): BASE}).cells,
                    record("speculative", {("chat", 1): FAST}, length=None).cells)
    assert q.acceptance_length is None and q.break_even_acceptance_length is None


def test_crossover_interpolated_between_last_pays_and_first_does_not() -> None:
    # c=1: 33/22 = 1.5 (pays); c=4: median 19.8/22 = 0.9 (does not pay); threshold 1:
    # 1 + (1.5 - 1) / (1.5 - 0.9) x (4 - 1) = 3.5
    base = record("baseline", {("chat", 1): BASE, ("chat", 4): BASE, ("chat", 8): BASE})
    spec = record("speculative", {("chat", 1): [31.0, 32.0, 33.0, 34.0, 35.0],
                                  ("chat", 4): [17.8, 18.8, 19.8, 19.9, 19.95],
                                  ("chat", 8): SLOW})
    c = compare(base, spec)
    assert [p.verdict for p in c.points] == [Verdict.PAYS, Verdict.DOES_NOT_PAY, Verdict.DOES_NOT_PAY]
    assert c.crossover_concurrency == pytest.approx(3.5)
    assert c.crossover_between["chat"] == (1, 4)


def test_no_crossover_when_everything_pays_or_nothing_does() -> None:
    base = record("baseline", {("chat", 1): BASE, ("chat", 4): BASE})
    assert compare(base, record("speculative", {("chat", 1): FAST, ("chat", 4): FAST})).crossover_concurrency is None
    assert compare(base, record("speculative", {("chat", 1): SLOW, ("chat", 4): SLOW})).crossover_concurrency is None
    assert crossover([]) is None


def test_inconclusive_points_between_are_skipped_for_the_crossover() -> None:
    base = record("baseline", {("chat", 1): BASE, ("chat", 2): BASE, ("chat", 4): BASE})
    spec = record("speculative", {("chat", 1): FAST, ("chat", 2): [20, 22, 24, 26, 28], ("chat", 4): SLOW})
    c = compare(base, spec)
    assert c.points[1].verdict is Verdict.INCONCLUSIVE
    assert c.crossover_between["chat"] == (1, 4)


@pytest.mark.parametrize("kw, words", [({"failed": 1}, "failed request"), ({"reset": True}, "restarted")])
def test_failed_or_restarted_cells_make_the_point_inconclusive(kw: dict, words: str) -> None:
    p = judge_point("chat", 1, record("baseline", {("chat", 1): BASE}).cells,
                    record("speculative", {("chat", 1): FAST}, **kw).cells)
    assert p.verdict is Verdict.INCONCLUSIVE and words in p.reason
    assert p.speedup is None


def test_a_point_measured_in_one_arm_only_is_inconclusive() -> None:
    c = compare(record("baseline", {("chat", 1): BASE}), record("speculative", {("chat", 1): FAST, ("chat", 4): FAST}))
    assert c.point("chat", 4) is not None
    assert c.point("chat", 4).verdict is Verdict.INCONCLUSIVE
    assert "no baseline cells" in c.point("chat", 4).reason


def test_zero_rate_is_inconclusive_not_a_crash() -> None:
    p = judge_point("chat", 1, record("baseline", {("chat", 1): BASE}).cells,
                    [cell("chat", 1, 1, 1.0).model_copy(update={"served_tokens_per_second": 0.0})])
    assert p.verdict is Verdict.INCONCLUSIVE and "not a positive rate" in p.reason


def test_refuses_swapped_arms_and_different_models() -> None:
    base, spec = record("baseline", {("chat", 1): BASE}), record("speculative", {("chat", 1): FAST})
    with pytest.raises(CompareError, match="expected BASELINE then SPECULATIVE"):
        compare(spec, base)
    with pytest.raises(CompareError, match="different model: baseline 'm', speculative 'other'"):
        compare(base, spec.model_copy(update={"model": "other"}))
    with pytest.raises(CompareError, match="different engine_version"):
        compare(base, spec.model_copy(update={"engine_version": "0.33.0"}))


def write(tmp: Path, name: str, rec: ProbeRecord) -> str:
    p = tmp / name
    p.write_text(json.dumps(rec.to_json()))
    return str(p)


def test_cli_json_shape_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = write(tmp_path, "b.json", record("baseline", {("chat", 1): BASE, ("chat", 4): BASE}))
    s = write(tmp_path, "s.json", record("speculative", {("chat", 1): FAST, ("chat", 4): SLOW}))
    assert main(["compare", b, s, "--format", "json"]) == 1  # one point does not pay
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"cells", "crossover_concurrency"}
    first = doc["cells"][0]
    assert {"mix", "concurrency", "speedup", "speedup_low", "speedup_high", "interval_kind", "p_value",
            "verdict", "acceptance_length", "break_even_acceptance_length"} <= set(first)
    assert (first["mix"], first["concurrency"], first["verdict"]) == ("chat", 1, "pays")
    assert doc["cells"][1]["verdict"] == "does_not_pay"
    # 1.4545 at c=1, 0.5455 at c=4: 1 + (1.4545 - 1) / (1.4545 - 0.5455) x 3 = 2.5
    assert doc["crossover_concurrency"] == pytest.approx(2.5)
    s2 = write(tmp_path, "s2.json", record("speculative", {("chat", 1): FAST, ("chat", 4): FAST}))
    assert main(["compare", b, s2]) == 0
    assert "pays" in capsys.readouterr().out
    # 3 against 3 (p = 1/20, not < 0.05) at c=1: inconclusive there, so the exit is 2
    b3 = write(tmp_path, "b3.json", record("baseline", {("chat", 1): BASE[:3], ("chat", 4): BASE}))
    s3 = write(tmp_path, "s3.json", record("speculative", {("chat", 1): FAST[:3], ("chat", 4): FAST}))
    assert main(["compare", b3, s3]) == 2


@pytest.mark.parametrize("content, words", [
    ("{", "not JSON"),
    ('{"arm": "baseline", "cells": []}', "cells"),
    ('{"arm": "fast", "cells": []}', "arm"),
])
def test_cli_bad_record_is_one_line_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           content: str, words: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    good = write(tmp_path, "s.json", record("speculative", {("chat", 1): FAST}))
    assert main(["compare", str(bad), good]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_cli_non_finite_rate_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = record("baseline", {("chat", 1): BASE}).to_json()
    text = json.dumps(doc).replace('"served_tokens_per_second": 20.0', '"served_tokens_per_second": NaN')
    (tmp_path / "b.json").write_text(text)
    good = write(tmp_path, "s.json", record("speculative", {("chat", 1): FAST}))
    assert main(["compare", str(tmp_path / "b.json"), good]) == 3
    assert "non-finite" in capsys.readouterr().err


def test_cli_missing_file_and_swapped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = write(tmp_path, "b.json", record("baseline", {("chat", 1): BASE}))
    s = write(tmp_path, "s.json", record("speculative", {("chat", 1): FAST}))
    assert main(["compare", str(tmp_path / "none.json"), s]) == 3
    assert main(["compare", s, b]) == 3
    err = capsys.readouterr().err
    assert "cannot read" in err and "expected BASELINE then SPECULATIVE" in err


def _crossing() -> tuple[ProbeRecord, ProbeRecord]:
    base = record("baseline", {("chat", 1): BASE, ("chat", 4): BASE, ("chat", 8): BASE, ("chat", 16): BASE})
    spec = record("speculative", {("chat", 1): [31.0, 32.0, 33.0, 34.0, 35.0],
                                  ("chat", 4): [17.8, 18.8, 19.8, 19.9, 19.95], ("chat", 8): SLOW,
                                  ("chat", 16): [20, 22, 24, 26, 28]})
    return base, spec


def test_plan_mix_answers_exact_between_and_outside() -> None:
    from gate.checks.acceptance.comparison import answer_for_mix, match_mix

    base, spec = _crossing()
    c = compare(base, spec)  # pays at 1, does not pay at 4 and 8, inconclusive at 16; crossover 3.5
    assert answer_for_mix(c, "chat", "chat", 1).verdict is Verdict.PAYS
    a = answer_for_mix(c, "chat", "chat", 4)
    assert a.verdict is Verdict.DOES_NOT_PAY and "crossover at concurrency 3.5" in a.reason
    assert "tok/s vs baseline 22 tok/s" in a.reason  # both speeds named
    # 2: between pays (1) and does_not_pay (4), below the crossover 3.5: never a pass on interpolation
    assert answer_for_mix(c, "chat", "chat", 2).verdict is Verdict.INCONCLUSIVE
    # 3.5 <= c: past the crossover
    ans6 = answer_for_mix(c, "chat", "chat", 6)
    assert ans6.verdict is Verdict.DOES_NOT_PAY and "between measured 4 and 8, both does_not_pay" in ans6.reason
    assert answer_for_mix(c, "chat", "chat", 12).verdict is Verdict.INCONCLUSIVE  # 8 dnp, 16 inconclusive
    assert answer_for_mix(c, "chat", "chat", 32).verdict is Verdict.INCONCLUSIVE  # outside the measured range
    assert answer_for_mix(c, None, "long", 1).verdict is Verdict.INCONCLUSIVE
    assert match_mix(c, base, spec, "chat", 256, TOKENS) == ("chat", None)
    assert match_mix(c, base, spec, "other", 256, TOKENS) == ("chat", None)  # matched by its shape
    assert match_mix(c, base, spec, "other", 1, 2) == (None, None)
    name, why = match_mix(c, base, spec, "chat", 8192, 2048)  # the name alone is not the requests
    assert name is None and why is not None and "probe mix chat is 256 prompt / 512 output tokens" in why


def test_past_the_crossover_between_pays_and_does_not() -> None:
    from gate.checks.acceptance.comparison import answer_for_mix

    base = record("baseline", {("chat", 1): BASE, ("chat", 8): BASE})
    spec = record("speculative", {("chat", 1): FAST, ("chat", 8): SLOW})
    c = compare(base, spec)
    # s1 = 32/22, s2 = 12/22: crossover 1 + (32/22 - 1) / (20/22) x 7 = 1 + 0.5 x 7 = 4.5
    assert c.crossover_concurrency == pytest.approx(4.5)
    assert answer_for_mix(c, "chat", "chat", 5).verdict is Verdict.DOES_NOT_PAY
    assert answer_for_mix(c, "chat", "chat", 4).verdict is Verdict.INCONCLUSIVE
