"""A restarted SGLang whose first scrape precedes its warm-up (the e2e's MISSED_RESTART case), with pages
built from the real SGLang 0.5.23 NGRAM captures in tests/fixtures/sglang/0.5.23/ngram/.

SGLang has no process_start_time_seconds. Restarted, it serves /metrics before its warm-up request:
the page has its gauges but no sample of any counter or histogram family (a labelled prometheus_client
counter shows no series until its first increment). That page is built here from the real
`metrics-before.txt` by dropping the samples of every family whose TYPE is counter or histogram, HELP
and TYPE lines kept. The sequence is the e2e's (tests/e2e/test_faults.py, SGLang): the old engine's
`metrics-after` (counters high), the engine down (a failed scrape), the restarted engine's page before
warm-up, then its real `before` (small counters), `during` and `after` pages. Expected numbers are
read from requests.json (the counters the recorder read around the traffic).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from exporter.collect import exposition
from exporter.derive import last_known, restarted
from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.state import ExporterState

NGRAM = Path(__file__).parents[3] / "fixtures" / "sglang" / "0.5.23" / "ngram"


def _text(which: str) -> str:
    return (NGRAM / f"metrics-{which}.txt").read_text()


def before_warmup(text: str) -> str:
    """The page of an SGLang that has not served a request yet: counter and histogram families keep
    their HELP/TYPE lines and lose every sample."""
    cumulative = set(re.findall(r"^# TYPE (\S+) (?:counter|histogram)$", text, re.M))
    kept = []
    for line in text.splitlines():
        if not line.startswith("#"):
            name = re.split(r"[{ ]", line, maxsplit=1)[0]
            base = re.sub(r"_(total|bucket|count|sum|created)$", "", name)
            if name in cumulative or base in cumulative or base + "_total" in cumulative:
                continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def _counters() -> dict[str, dict[str, float]]:
    doc = json.loads((NGRAM / "requests.json").read_text())
    return doc["counters"]


def _samples(text: str) -> dict[str, float]:
    return {s.name: s.value for fam in text_string_to_metric_families(text) for s in fam.samples
            if not s.labels.get("le") and "window" not in s.labels}


def _run(pages: list[str | None]) -> ExporterState:
    """Feed pages at 30 s steps (None: a failed scrape, the engine down)."""
    settings = ExporterSettings(windows=[30.0, 60.0], batch_window=30.0, min_drafts=1, acceptance_slo_target=2.0)
    st = ExporterState.from_settings(settings, started_at=0.0)
    for i, text in enumerate(pages):
        if text is None:
            st.record_failure("connect", "connection refused", 0.001)
        else:
            st.record_success(snapshot_from_text(text, timestamp=1000.0 + 30.0 * i), 0.004)
    return st


def test_the_built_page_has_gauges_and_no_counters() -> None:
    (s,) = snapshot_from_text(before_warmup(_text("before")), timestamp=0.0).streams
    assert s.kv_pool_tokens == 8192 and s.context_cap_tokens == 512
    assert s.generation_tokens is None and s.prompt_tokens is None and s.ttft is None
    assert s.spec is None or s.spec.verify_calls is None
    assert all(v is None for v in s.cumulative.values())


def test_the_rule_sees_the_restart_against_the_last_known_values() -> None:
    old = snapshot_from_text(_text("after"), timestamp=0.0).streams[0]
    empty = snapshot_from_text(before_warmup(_text("before")), timestamp=30.0).streams[0]
    small = snapshot_from_text(_text("before"), timestamp=60.0).streams[0]
    # consecutive pages alone: nothing went down (the case the e2e found)
    assert not restarted(old, empty, None, None) and not restarted(empty, small, None, None)
    # against the last known values: verify calls 104 -> 4, generated 265 -> 9
    sight = last_known(old, empty, reset=False)
    assert sight.spec is not None and sight.spec.verify_calls == _counters()["after"]["verify_calls"]
    assert restarted(sight, small, None, None)
    assert last_known(sight, small, reset=True) is small  # nothing of the old process is carried


def test_restart_before_warmup_is_counted_and_totals_continue() -> None:
    c = _counters()
    old, new = c["after"], c["after"]  # the old engine's last page, and the new engine's after its traffic
    st = _run([_text("after"), None, before_warmup(_text("before")), _text("before"), _text("during"),
               _text("after")])
    got = _samples(exposition(st))
    assert got["specgate_engine_restarts_total"] == 1
    # exporter total = what it had seen before the kill + the new engine's counters from zero
    assert got["specgate_spec_drafts_total"] == old["verify_calls"] + new["verify_calls"]
    # decode-only: each finished request's prefill token is no accepted draft token (`requests`: num_requests_total)
    assert got["specgate_spec_accepted_tokens_total"] == \
        (old["generation_tokens"] - old["requests"] - old["verify_calls"]) \
        + (new["generation_tokens"] - new["requests"] - new["verify_calls"])
    wins = list(st.tracker.completed)
    reset = [w for w in wins if w.reset]
    assert reset and all(w.end > 1000.0 + 30.0 for w in reset)  # after the restart
    k = new["num_draft_tokens"]
    assert all(w.acceptance_length is None or 1.0 <= w.acceptance_length <= k for w in wins)


def test_a_family_that_is_missing_once_and_comes_back_higher_is_no_restart() -> None:
    c = _counters()
    st = _run([_text("before"), before_warmup(_text("during")), _text("after")])
    got = _samples(exposition(st))
    assert got.get("specgate_engine_restarts_total", 0) == 0
    # the increase over the missing page is counted from the last known value, not lost
    assert got["specgate_spec_drafts_total"] == c["after"]["verify_calls"]
    assert got["specgate_spec_accepted_tokens_total"] == \
        c["after"]["generation_tokens"] - c["after"]["requests"] - c["after"]["verify_calls"]
