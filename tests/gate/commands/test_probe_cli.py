"""`specgate probe` and `specgate probe ab` are two sub-commands, each with its own page (issue 36, item 7).

Why: `ab` was an optional positional of `probe`, so `probe ab --help` printed the one-arm page, its four
flags buried among one-arm flags it refuses. These tests hold the split as a newcomer meets it: each page shows
its own flags and not the other's, `probe --help` names both sub-commands, and `probe ab` with the argv of the
walk-through still runs both arms on two replayed engines (real vLLM captures, tests/gate/probe/probe_replay.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from tests.gate.probe.probe_replay import ReplayEngine


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


def test_probe_ab_help_is_its_own_page(capsys: pytest.CaptureFixture[str]) -> None:
    page = _help(capsys, "probe", "ab")
    assert page.startswith("usage: specgate probe ab ")
    for flag in ("--baseline-url", "--speculative-url", "--out-baseline", "--out-speculative", "--concurrency",
                 "--speculative-config", "--time-limit"):
        assert flag in page, flag
    for one_arm in ("--engine-url", "--arm ", "--out FILE", "--append"):
        assert one_arm not in page, one_arm
    assert "interleaves the arms ABBA" in page


def test_probe_help_is_one_arm_and_names_both_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    page = _help(capsys, "probe")
    assert page.startswith("usage: specgate probe [")
    assert "--engine-url" in page and "--append" in page
    assert "--baseline-url" not in page and "--out-baseline" not in page
    assert "specgate probe ab " in page and "specgate probe import " in page
    assert "[ab]" not in page  # no optional positional any more


def test_probe_ab_without_its_four_flags_is_one_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["probe", "ab", "--baseline-url", "http://127.0.0.1:1", "--prompt-tokens", "8"])
    assert e.value.code == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--speculative-url, --out-baseline, --out-speculative" in err


def test_one_arm_flags_are_refused_by_probe_ab(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["probe", "ab", "--baseline-url", "u", "--speculative-url", "v", "--out-baseline", "b",
              "--out-speculative", "s", "--engine-url", "w"])
    assert e.value.code == 3
    assert "unrecognized arguments: --engine-url w" in capsys.readouterr().err


def test_probe_ab_argv_runs_both_arms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base_out, spec_out = tmp_path / "base.json", tmp_path / "spec.json"
    with ReplayEngine("nospec") as base, ReplayEngine("ngram") as spec:
        rc = main(["probe", "ab", "--baseline-url", base.url, "--speculative-url", spec.url,
                   "--speculative-config", '{"method":"ngram","num_speculative_tokens":3}',
                   "--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1", "--repetitions", "2",
                   "--requests", "1", "--warmup", "0", "--no-client-ceiling", "--no-progress",
                   "--out-baseline", str(base_out), "--out-speculative", str(spec_out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    b, s = json.loads(base_out.read_text()), json.loads(spec_out.read_text())
    assert (b["arm"], s["arm"]) == ("baseline", "speculative")
    assert b["pairing"]["partner"] == "spec.json" and s["pairing"]["partner"] == "base.json"
    assert len(b["cells"]) == len(s["cells"]) == 2
    assert f"wrote {base_out}: 2 cells" in err and f"wrote {spec_out}: 2 cells" in err
