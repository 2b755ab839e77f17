"""`specgate exporter once|window` and `specgate replay`: the DESIGN.md command-line contract."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from gate.cli import main

VLLM = Path(__file__).parents[1] / "fixtures" / "vllm"
SPECGATE = [sys.executable, "-m", "gate.cli"]


def run_json(capsys, argv: list[str]) -> tuple[int, dict]:
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out)


def test_once_json_shape_and_values(capsys):
    rc, doc = run_json(capsys, ["exporter", "once", "--from-file", str(VLLM / "metrics-ngram-after.txt"),
                                "--format", "json"])
    assert rc == 0
    assert doc["engine"] == "vllm"
    (s,) = doc["streams"]
    assert set(s) == {"model", "rank", "kv_pool_tokens", "kv_block_size", "kv_usage_ratio", "context_cap_tokens",
                      "spec", "ttft_count", "prompt_tokens", "generation_tokens", "requests_running",
                      "requests_waiting", "kv_available_tokens", "kv_used_tokens", "kv_cache_memory_bytes",
                      "weight_memory_bytes", "spec_block_accept_length", "spec_cap_length", "spec_num_steps",
                      "spec_num_draft_tokens", "finished_requests"}
    assert doc["speculative"] is None  # vLLM's page does not say; SGLang's /server_info does
    # values straight from the capture (NOTES.md): 64 blocks x 128, 522/1473/1170, per position 446/393/331
    assert (s["model"], s["rank"], s["kv_pool_tokens"], s["kv_block_size"]) == ("tiny", "0", 8192, 128)
    assert s["spec"] == {"drafts": 522, "draft_tokens": 1473, "accepted_tokens": 1170,
                         "accepted_per_position": [446, 393, 331]}
    assert s["context_cap_tokens"] is None  # not in /metrics: only from GET /v1/models
    assert s["ttft_count"] == 11 and s["generation_tokens"] == 1840


def test_once_nospec_has_null_spec(capsys):
    rc, doc = run_json(capsys, ["exporter", "once", "--from-file", str(VLLM / "metrics-nospec-after.txt")])
    assert rc == 0 and doc["streams"][0]["spec"] is None


@pytest.mark.parametrize(("before", "after", "length", "rate", "reset"), [
    ("ngram-before", "ngram-after", 1 + 1170 / 522, 1170 / 1473, False),   # 3.24 / 79.4%
    ("draftself-before", "draftself-after", 4.0, 1.0, False),
    ("draft-before", "draft-after", 1.0, 0.0, False),
    ("ngram-after", "draftself-after", 4.0, 1.0, True),  # drafts go down: restart
])
def test_window(capsys, before, after, length, rate, reset):
    rc, doc = run_json(capsys, ["exporter", "window", str(VLLM / f"metrics-{before}.txt"),
                                str(VLLM / f"metrics-{after}.txt"), "--format", "json"])
    assert rc == 0
    (s,) = doc["streams"]
    assert s["reset"] is reset
    assert s["acceptance_length"] == pytest.approx(length)
    assert s["acceptance_rate"] == pytest.approx(rate)
    assert set(s["ttft_seconds"]) == {"p50", "p90", "p99"}
    assert s["decode_tokens_per_second"] is None  # no --seconds given


def test_window_seconds_gives_decode_rate(capsys):
    rc, doc = run_json(capsys, ["exporter", "window", str(VLLM / "metrics-ngram-before.txt"),
                                str(VLLM / "metrics-ngram-after.txt"), "--seconds", "10"])
    # generation_tokens_total: before and after capture values, over 10 s
    before = [ln for ln in (VLLM / "metrics-ngram-before.txt").read_text().splitlines()
              if ln.startswith("vllm:generation_tokens_total")][0]
    gen_before = float(before.split()[-1])
    assert doc["streams"][0]["decode_tokens_per_second"] == pytest.approx((1840 - gen_before) / 10)


def test_min_drafts_hides_acceptance(capsys):
    rc, doc = run_json(capsys, ["exporter", "window", str(VLLM / "metrics-ngram-before.txt"),
                                str(VLLM / "metrics-ngram-after.txt"), "--min-drafts", "10000"])
    s = doc["streams"][0]
    assert s["drafts"] == 522 and s["acceptance_length"] is None and s["acceptance_rate"] is None


@pytest.mark.parametrize("content", [
    "<!DOCTYPE html><html><body>Prometheus Time Series Collection</body></html>\n",
    '{"status": "success", "data": {"resultType": "vector", "result": []}}\n',
    "",
])
def test_once_refuses_pages_that_are_not_prometheus_text(tmp_path, content):
    f = tmp_path / "page.txt"
    f.write_text(content)
    p = subprocess.run([*SPECGATE, "exporter", "once", "--from-file", str(f), "--format", "json"],
                       capture_output=True, text=True)
    assert p.returncode == 3
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specgate: error:")


def test_once_missing_file_is_invalid_input(tmp_path, capsys):
    assert main(["exporter", "once", "--from-file", str(tmp_path / "nope.txt")]) == 3
    assert "cannot read" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_replay_serves_advancing_counters_and_once_reads_it(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([*SPECGATE, "replay", "--port", str(port), "--step-seconds", "1"],
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                r = requests.get(url + "/metrics", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        first = float([ln for ln in r.text.splitlines()
                       if ln.startswith("vllm:spec_decode_num_drafts_total")][0].split()[-1])
        time.sleep(1.2)
        env = dict(os.environ)
        p = subprocess.run([*SPECGATE, "exporter", "once", "--engine-url", url, "--format", "json"],
                           capture_output=True, text=True, env=env, timeout=30)
        assert p.returncode == 0, p.stderr
        s = json.loads(p.stdout)["streams"][0]
        assert s["spec"]["drafts"] > first
        assert s["context_cap_tokens"] == 512  # from the replay's /v1/models
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def _drafts(text: str) -> float:
    return float([ln for ln in text.splitlines() if ln.startswith("vllm:spec_decode_num_drafts_total")][0].split()[-1])


@pytest.mark.parametrize("directory", [None, VLLM])
def test_replay_plays_before_during_after_in_time_order(directory):
    # Plain name order is after < before < during. The real ngram run's drafts are 0 (before),
    # 126 (during), 522 (after) -- tests/fixtures/vllm/metrics-ngram-*.txt.
    from exporter.replay import Replay, load_captures, play_order

    if directory is None:
        texts, _ = load_captures(None)
    else:
        names = sorted((p.name for p in VLLM.glob("metrics-ngram-*.txt") if "kvmetrics" not in p.name), key=play_order)
        assert names == ["metrics-ngram-before.txt", "metrics-ngram-during.txt", "metrics-ngram-after.txt"]
        texts = [(VLLM / n).read_text() for n in names]
    assert [_drafts(t) for t in texts] == [0.0, 126.0, 522.0]
    replay = Replay(texts, step_seconds=5.0, loop=False, start=0.0)
    assert _drafts(replay.page(0.0)) == 0.0
    assert _drafts(replay.page(5.0)) == 126.0
    assert _drafts(replay.page(10.0)) == 522.0  # one run, counted once: not 522 + 0 + 126


@pytest.mark.parametrize(("argv", "env", "named"), [
    (["--min-drafts", "0"], {}, "--min-drafts / SPECGATE_MIN_DRAFTS"),
    (["--listen", "nonsense"], {}, "--listen / SPECGATE_LISTEN"),
    ([], {"SPECGATE_SCRAPE_INTERVAL": "abc"}, "--scrape-interval / SPECGATE_SCRAPE_INTERVAL"),
    ([], {"SPECGATE_WINDOWS": "1m,0s"}, "--windows / SPECGATE_WINDOWS"),
])
@pytest.mark.parametrize("entry", [[*SPECGATE, "exporter", "run"], [sys.executable, "-m", "exporter"]])
def test_run_with_a_bad_setting_is_one_line_and_exit_3(entry, argv, env, named):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SPECGATE_")} | env
    r = subprocess.run([*entry, *argv], capture_output=True, text=True, env=environ, timeout=60, check=False)
    assert r.returncode == 3, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and "Traceback" not in r.stderr, r.stderr


def test_the_same_window_twice_is_one_window():
    from exporter.settings import ExporterSettings

    assert ExporterSettings(windows="60s,1m,5m").windows == [60.0, 300.0]


def test_once_with_the_wrong_engine_forced_is_an_error_not_empty_streams(capsys):
    assert main(["exporter", "once", "--from-file", str(VLLM / "metrics-ngram-after.txt"), "--engine", "sglang"]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds only vllm" in err
