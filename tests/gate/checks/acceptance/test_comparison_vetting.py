"""`specgate compare` refuses records that are not one consistent experiment (issue 21, "Wrong passes" 1): each
class is one line on stderr and exit 3, never a verdict; `--alpha` outside (0, 0.2] likewise. The complete
records of test_comparison.py (today's `specgate.probe/1` shape, as `specgate probe` writes it) still compare."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gate.checks.acceptance.comparison import CompareError, compare
from gate.cli import main
from tests.gate.checks.acceptance.test_comparison import BASE, FAST, SLOW, now_iso, record


def _write(tmp: Path, name: str, doc: dict[str, Any]) -> str:
    p = tmp / name
    p.write_text(json.dumps(doc))
    return str(p)


@dataclass(frozen=True)
class Ago:
    """A date `seconds` before the test runs (not before it was collected: the run may start minutes later)."""

    seconds: float


def _pair(tmp: Path, base: dict[str, Any] | None = None, spec: dict[str, Any] | None = None,
          spec_doc: Any = None) -> tuple[str, str]:
    b = record("baseline", {("chat", 1): BASE, ("chat", 4): BASE}).to_json()
    s = record("speculative", {("chat", 1): FAST, ("chat", 4): SLOW}).to_json()
    b.update({k: now_iso(-v.seconds) if isinstance(v, Ago) else v for k, v in (base or {}).items()})
    s.update(spec or {})
    if spec_doc is not None:
        spec_doc(s)
    return _write(tmp, "b.json", b), _write(tmp, "s.json", s)


def _refused(capsys: pytest.CaptureFixture[str], b: str, s: str, *extra: str) -> str:
    t0 = time.monotonic()
    try:
        rc = main(["compare", b, s, *extra])
    except SystemExit as e:  # argparse usage errors
        rc = int(e.code or 0)
    assert time.monotonic() - t0 < 20
    out, err = capsys.readouterr()
    assert rc == 3 and out == "", (rc, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_controls_still_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b, s = _pair(tmp_path)
    assert main(["compare", b, s]) == 1  # pays at 1, does not pay at 4
    assert main(["compare", b, s, "--alpha", "0.2"]) == 1
    capsys.readouterr()


def _copy_cells(doc: dict[str, Any]) -> None:
    doc["cells"] = doc["cells"] + doc["cells"][:2]


def _cell(**update: Any) -> Any:
    def apply(doc: dict[str, Any]) -> None:
        doc["cells"][0].update(update)
    return apply


@pytest.mark.parametrize("base, spec, spec_doc, words", [
    ({"engine": "sglang"}, None, None, "different engine: baseline 'sglang', speculative 'vllm'"),
    ({"model": None}, None, None, "the baseline record's model is unknown (null)"),
    (None, {"engine_version": None}, None, "the speculative record's engine_version is unknown"),
    (None, None, _copy_cells, "repetition 1 2 times"),
    (None, {"workload": []}, None, "cells of mix 'chat' have no workload entry"),
    (None, None, _cell(served_tokens_per_second=31.5), "is not output_tokens / wall_seconds"),
    (None, None, _cell(output_tokens=10_000, wall_seconds=10_000 / 30.0),
     "10000 output tokens for 8 completed requests = 1250 per request, not the mix's 512"),
    (None, None, _cell(acceptance_length=12.0), "acceptance length 12 > 1 + k = 4"),
    (None, None, _cell(per_request_acceptance_length=[1.5, 800.0]), "acceptance length 800 > 1 + k = 4"),
    (None, {"speculative": None}, None, "names no speculative settings"),
    ({"speculative": {"method": "ngram", "num_speculative_tokens": 3}}, None, None,
     "baseline record carries speculative settings"),
    ({"created_at": "2018-11-02T08:00:00+00:00"}, None, None, "lies before 2024-01-01"),
    (None, {"created_at": "2101-01-01T00:00:00+00:00"}, None, "after now"),
    (None, {"created_at": "not a date"}, None, "'not a date' is not an ISO 8601 date"),
    ({"created_at": Ago(26 * 3600)}, None, None, "measured 26.0 h apart"),
])
def test_inconsistent_records_are_one_line_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 base: dict | None, spec: dict | None, spec_doc: Any,
                                                 words: str) -> None:
    b, s = _pair(tmp_path, base, spec, spec_doc)
    err = _refused(capsys, b, s)
    assert words in err, err


def test_no_speculation_in_any_cell_and_acceptance_on_the_baseline(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    def strip(doc: dict[str, Any]) -> None:
        for c in doc["cells"]:
            c["acceptance_length"] = None

    b, s = _pair(tmp_path, spec_doc=strip)
    assert "measured no speculation" in _refused(capsys, b, s)
    base = record("baseline", {("chat", 1): BASE, ("chat", 4): BASE}).to_json()
    base["cells"][3]["drafts"] = 40.0
    s = _pair(tmp_path)[1]
    assert "a baseline cell carries speculative acceptance" in _refused(capsys, _write(tmp_path, "b2.json", base), s)


@pytest.mark.parametrize("alpha", ["0.9", "0.25", "1", "0", "-0.1", "nan", "inf"])
def test_alpha_outside_0_to_0_2_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str], alpha: str) -> None:
    b, s = _pair(tmp_path)
    err = _refused(capsys, b, s, "--alpha", alpha)
    assert "--alpha" in err


def test_compare_refuses_alpha_above_the_bound_as_a_function_too() -> None:
    base, spec = record("baseline", {("chat", 1): BASE}), record("speculative", {("chat", 1): FAST})
    with pytest.raises(CompareError, match=r"alpha must be in \(0, 0.2\]"):
        compare(base, spec, alpha=0.5)
    assert compare(base, spec, alpha=0.2).alpha == 0.2


def test_records_the_probe_writes_pass_every_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The control: both arms probed by `specgate probe` (the replayed real vLLM 0.32.0 streams of
    tests/gate/probe/test_probe.py) are one consistent experiment about a vLLM ngram k = 3 plan serving `m`."""
    from gate.evidence.probe_vetting import pair_defects, plan_defects, record_defects
    from gate.evidence.probes import load_record
    from gate.plan.model import plan_from_dict
    from tests.gate.probe.probe_replay import ReplayEngine
    from tests.gate.probe.test_probe import NGRAM

    out = {}
    for arm, capture in (("baseline", "nospec"), ("speculative", "ngram")):
        out[arm] = tmp_path / f"{arm}.json"
        args = ["probe", "--arm", arm, "--out", str(out[arm]), "--prompt-tokens", "8", "--output-tokens", "16",
                "--concurrency", "1", "--repetitions", "2", "--requests", "1", "--warmup", "0"]
        with ReplayEngine(capture) as eng:
            extra = ["--speculative-config", NGRAM] if arm == "speculative" else []
            assert main([*args, "--engine-url", eng.url, *extra]) == 0, capsys.readouterr().err
    base, spec = load_record(out["baseline"]), load_record(out["speculative"])
    # the client ceiling measured at each probe's start (the rule a record cannot unmark is among those checked)
    assert base.client_ceiling is not None and spec.client_ceiling is not None
    assert all(c.client_bound is False for c in (*base.cells, *spec.cells))
    assert record_defects(base) == [] and record_defects(spec) == []
    assert pair_defects(base, spec, time.time()) == []
    plan = plan_from_dict({"name": "p", "target": {"name": "m"},
                           "engine": {"kind": "vllm", "version": "0.32.0",
                                      "speculative": {"method": "ngram", "num_speculative_tokens": 3}},
                           "workload": [{"name": "w", "concurrency": 1, "prompt_tokens": 8, "output_tokens": 16}]})
    assert plan_defects(plan, base, spec, "post", time.time()) == []
    assert main(["compare", str(out["baseline"]), str(out["speculative"])]) == 2  # 2 vs 2: never significant
    capsys.readouterr()
