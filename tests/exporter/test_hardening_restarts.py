"""Restarts against more than one engine behind one URL (issue 14, item 3; design.md "Restarts").

A restart is counters going down or a start time moving forward. A start time moving back — to an
earlier value, or to one seen before — is more than one engine process answering the same URL (a
load balancer in front of replicas): counted as `multiple_engines`, each process's counters kept
apart (the totals grow by each one's own increases), every window across it reset.

Pages: the real vLLM 0.32 ngram capture with its drafts/accepted counters and start time rewritten.
"""

from __future__ import annotations

import re
from pathlib import Path

from exporter.scrape import snapshot_from_text
from exporter.settings import ExporterSettings
from exporter.state import ExporterState

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NGRAM = (FIXTURES / "vllm" / "metrics-ngram-after.txt").read_text()
A, B = 1.7959e9, 1.7960e9  # two engine processes' start times (B started later)


def page(start: float, drafts: float, draft_tokens: float, accepted: float) -> str:
    text = re.sub(r"^process_start_time_seconds \S+$", f"process_start_time_seconds {start!r}", NGRAM, flags=re.M)
    for name, v in (("drafts", drafts), ("draft_tokens", draft_tokens), ("accepted_tokens", accepted)):
        text = re.sub(rf'^(vllm:spec_decode_num_{name}_total\{{engine="0",model_name="tiny"\}}) \S+$',
                      rf"\g<1> {float(v)!r}", text, flags=re.M)
    return re.sub(r'^vllm:spec_decode_num_accepted_tokens_per_pos_total.*\n', "", text, flags=re.M)


def run(pages: list[str], step: float = 5.0) -> ExporterState:
    st = ExporterState.from_settings(ExporterSettings(windows=[4.0], batch_window=4.0, min_drafts=1),
                                     started_at=0.0)
    for i, p in enumerate(pages):
        st.record_success(snapshot_from_text(p, "vllm", timestamp=1.8e9 + step * i), 0.0)
    return st


def test_a_start_time_flapping_between_two_replicas_counts_each_ones_own_increases():
    # Before: every flip was a restart adding the engine's whole cumulative value (drafts 5,416 while the
    # engine grew by ~80). Replica A from 2,600 drafts, replica B from 2,700, each growing by 4 per scrape.
    pages = []
    for i in range(20):
        if i % 2 == 0:
            pages.append(page(A, 2600 + 4 * i, 7800 + 12 * i, 4000 + 8 * i))
        else:
            pages.append(page(B, 2700 + 4 * i, 8100 + 12 * i, 4200 + 8 * i))
    st = run(pages)
    t = st.tracker.totals[("tiny", "0")]
    # A's value adopted at first sight, B's once (its first answer looks like a restart: its start moved
    # forward), then only each process's own growth: A 9 steps x 8, B 9 steps x 8.
    assert t.drafts == 2600 + 2704 + 9 * 8 + 9 * 8
    assert t.restarts == 1
    assert st.anomalies["multiple_engines"] == 18
    assert t.accepted_tokens == 4000 + 4208 + 9 * 16 + 9 * 16


def test_a_start_time_moving_back_to_an_earlier_unseen_value_is_another_engine_not_a_restart():
    st = run([page(B, 2700, 8100, 4200), page(A, 2600, 7800, 4000), page(A, 2610, 7830, 4020)])
    t = st.tracker.totals[("tiny", "0")]
    assert t.restarts == 0 and st.anomalies["multiple_engines"] == 1
    assert t.drafts == 2700 + 10  # A's whole 2,600 never added; its own growth (10) is
    assert t.accepted_tokens == 4200 + 20


def test_windows_that_mix_two_processes_are_reset_and_never_an_slo_observation():
    st = run([page(A, 2600, 7800, 4000), page(A, 2610, 7830, 4020), page(B, 2700, 8100, 4200),
              page(A, 2620, 7860, 4040)], step=5.0)
    (w,) = st.tracker.sliding(4.0)  # from the B page to the A page: two processes
    assert w.reset is True
    assert all(c.reset for c in st.tracker.completed if c.end >= 1.8e9 + 10.0)
    t = st.tracker.totals[("tiny", "0")]
    assert t.windows_total == 1  # only the A -> A window counts


def test_a_real_restart_still_is_one():
    st = run([page(A, 2600, 7800, 4000), page(A, 2610, 7830, 4020), page(B, 10, 30, 20)])
    t = st.tracker.totals[("tiny", "0")]
    assert t.restarts == 1 and st.anomalies["multiple_engines"] == 0
    assert t.drafts == 2610 + 10  # the restarted engine's own values, as increase() takes them


# --- SGLang: a restart behind a split-only label (`pid`) is seen before the fold -------------------------

M = "Qwen/Qwen3-8B"


def sglang_page(per_pid: dict[str, tuple[float, float]], start: float = A) -> str:
    """An SGLang >= 0.5.13 page (the families of tests/fixtures/sglang/sglang-0.5.23-*.txt) with one
    generation/verify-calls series per `pid`."""
    lines = ["# TYPE sglang:generation_tokens_total counter", "# TYPE sglang:spec_verify_calls_total counter"]
    for pid, (gen, verify) in per_pid.items():
        lines.append(f'sglang:generation_tokens_total{{model_name="{M}",pid="{pid}"}} {gen!r}')
        lines.append(f'sglang:spec_verify_calls_total{{model_name="{M}",pid="{pid}"}} {verify!r}')
        lines.append(f'sglang:num_requests_total{{model_name="{M}",pid="{pid}"}} 10.0')  # finished requests
    lines.append(f'sglang:spec_num_draft_tokens{{model_name="{M}"}} 4.0')
    lines.append(f"process_start_time_seconds {start!r}")
    return "\n".join(lines) + "\n"


def test_a_restarted_pid_behind_the_fold_resets_the_whole_stream_window():
    # Before: pid 1 restarted (1,500 -> 100 generated, 600 -> 30 verify calls) while the folded sums still
    # grew (2,500 -> 2,600 and 900 -> 930): L 100/30 = 3.33 from the folded deltas, reset false. Judged per
    # split series, it is a restart: the window's deltas are the later snapshot's alone.
    from exporter.derive import derive_window

    before = snapshot_from_text(sglang_page({"1": (1500.0, 600.0), "2": (1000.0, 300.0)}), "sglang", timestamp=0.0)
    after = snapshot_from_text(sglang_page({"1": (100.0, 30.0), "2": (2500.0, 900.0)}), "sglang", timestamp=30.0)
    (w,) = derive_window(before, after, 30.0, min_drafts=1)
    assert w.reset is True
    assert abs(w.acceptance_length - (2600 - 20) / 930) < 1e-12  # 2.774: the later page's 10 + 10 requests
    st = ExporterState.from_settings(ExporterSettings(windows=[30.0], min_drafts=1), started_at=0.0)
    st.record_success(before, 0.0)
    st.record_success(after, 0.0)
    assert st.tracker.totals[(M, None)].restarts == 1


def test_split_series_that_all_grow_are_no_restart():
    from exporter.derive import derive_window

    before = snapshot_from_text(sglang_page({"1": (1500.0, 600.0), "2": (1000.0, 300.0)}), "sglang", timestamp=0.0)
    after = snapshot_from_text(sglang_page({"1": (1600.0, 640.0), "2": (1200.0, 370.0)}), "sglang", timestamp=30.0)
    (w,) = derive_window(before, after, 30.0, min_drafts=1)
    assert w.reset is False and abs(w.acceptance_length - 300 / 110) < 1e-12  # no request finished in between
