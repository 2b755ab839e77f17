"""Open-loop probes end by their time limit (issue 34, item 3): an arrival past the campaign's end is never
waited for, and a campaign whose arrivals alone are expected to outlast `--time-limit` is refused before its
first request. Wall-time bounds are loose (CI shares two loaded cores) but far below what the old behaviour
took (the whole arrival schedule: 60 s and more here)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gate.cli import main
from gate.probe.batch import TimeUp, run_open
from gate.probe.ceiling import NullEngine
from gate.probe.client import CompletionClient
from gate.probe.null_engine import MODEL
from gate.probe.runner import ProbeConfig
from tests.gate.probe.probe_replay import ReplayEngine


def test_an_arrival_past_the_time_limit_is_not_waited_for() -> None:
    with NullEngine() as engine:
        client = CompletionClient(engine.url, MODEL, timeout=10.0)
        t0 = time.monotonic()
        with pytest.raises(TimeUp):  # the second request (at 60 s) never started: no record
            run_open(client, ["hello"], 4, (0.0, 60.0), "mix m", stop_at=t0 + 1.0)
        took = time.monotonic() - t0
    assert took < 15.0, f"run_open waited {took:.1f} s for an arrival past its 1 s limit"


def test_a_campaign_whose_arrivals_outlast_the_time_limit_is_refused_before_sending(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "b.json"
    with ReplayEngine("nospec") as eng:
        t0 = time.monotonic()
        rc = main(["probe", "--engine-url", eng.url, "--arm", "baseline", "--out", str(out), "--no-client-ceiling",
                   "--prompt-tokens", "8", "--output-tokens", "16", "--request-rate", "0.01", "--time-limit", "5"])
        took = time.monotonic() - t0
        assert eng.state.completions_started == 0
    err = capsys.readouterr().err
    assert rc == 3 and not out.exists() and took < 5.0
    assert err.count("\n") == 1 and "Traceback" not in err
    # 5 repetitions of 16 requests at 0.01/s: 15 / 0.01 = 1,500 s each
    assert "expected to take 7,500 s" in err and "5 cell(s) of 16 requests at 0.01 per second" in err
    assert "more than --time-limit 5 s" in err


def test_both_arms_share_the_time_limit() -> None:
    from gate.evidence.probes import ProbeError
    from gate.probe.runner import refuse_arrivals

    cfg = ProbeConfig(engine_url="http://127.0.0.1:9", arm="baseline", request_rates=(1.0,), repetitions=2,
                      requests_per_cell=6, time_limit=30.0)
    mixes = [("m", None)]
    assert cfg.arrival_seconds(mixes) == pytest.approx(10.0)
    cfg.check_bounds(mixes)  # one arm: 10 s of arrivals in 30 s
    refuse_arrivals([(cfg, mixes), (cfg, mixes)], 30.0)  # two: 20 s
    with pytest.raises(ProbeError, match="expected to take 30 s .* more than --time-limit 25 s"):
        refuse_arrivals([(cfg, mixes)] * 3, 25.0)
