"""Counter identities of capture files (issue 34, plausibility; gate.evidence.captures.impossible_counters).

Each mutation starts from a real capture and changes one counter so that no engine could have written the page:
vLLM 0.32 on CPU, ngram k = 3 (tests/fixtures/vllm/metrics-ngram-*.txt: one process, one start time) and SGLang
0.5.23 EAGLE-3 (tests/fixtures/sglang/0.5.23/eagle3, which counts verify calls). Generated with Hypothesis
(derandomized, 20 examples each); every one must be refused with the plausibility invariant's message: `check`
reads the group as an evidence error (no windows), `tune --captures` exits 3 with one line. Controls: every real
capture group in tests/fixtures and seed 004's rebuilt captures read clean.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.cli import main
from gate.evidence.captures import ImpossibleCounters, from_capture_files, read_group

ROOT = Path(__file__).resolve().parents[3]
VLLM = [ROOT / f"tests/fixtures/vllm/metrics-ngram-{p}.txt" for p in ("before", "during", "after")]
SGLANG = [ROOT / f"tests/fixtures/sglang/0.5.23/eagle3/metrics-{p}.txt" for p in ("before", "after")]
SEED004 = sorted((ROOT / "examples/plans/captures").glob("seed004-*.txt"))
FAST = settings(derandomize=True, max_examples=20, database=None, deadline=None)
PLAUSIBILITY = "not possible: "

# The real groups: name -> files in time order (each must read clean).
CONTROLS = {
    **{f"vllm-{m}": [ROOT / f"tests/fixtures/vllm/metrics-{m}-{p}.txt" for p in ("before", "during", "after")]
       for m in ("ngram", "draft", "draftself", "nospec", "ngram-kvmetrics")},
    **{f"vllm-{m}": [ROOT / f"tests/fixtures/vllm/methods/{m}/metrics-{p}.txt" for p in ("before", "during", "after")]
       for m in ("eagle", "eagle3", "mtp")},
    **{f"sglang-{m}": [ROOT / f"tests/fixtures/sglang/0.5.23/{m}/metrics-{p}.txt"
                       for p in ("before", "during", "after")] for m in ("eagle3", "ngram", "standalone")},
    **{f"llamacpp-{m}": [ROOT / f"tests/fixtures/llamacpp/{m}/metrics-{p}.txt" for p in ("before", "during", "after")]
       for m in ("draft", "draftself", "ngram", "nospec")},
    "trtllm": [ROOT / f"tests/fixtures/trtllm/metrics-{p}.txt" for p in ("before", "after-2", "after-4")],
    "vllm-schedule": sorted((ROOT / "tests/fixtures/dynamic-depth").glob("vllm-schedule-metrics-*.txt")),
    "sglang-adaptive": sorted((ROOT / "tests/fixtures/dynamic-depth").glob("sglang-adaptive-metrics-*.txt")),
    "seed004": SEED004,
}


def _value(text: str, series: str) -> float:
    """The value of the one sample line that starts with `series` (name and labels as the page writes them)."""
    (line,) = [ln for ln in text.splitlines() if ln.startswith(series + " ")]
    return float(line.rsplit(" ", 1)[1])


def _set(text: str, series: str, value: float) -> str:
    out, n = re.subn(rf"^{re.escape(series)} \S+$", f"{series} {value!r}", text, flags=re.M)
    assert n == 1, series
    return out


def _refused(files: list[Path], texts: list[str]) -> str:
    """Write the pages, read them as check and tune do; the one-line reason both give."""
    with tempfile.TemporaryDirectory() as d:
        paths = [Path(d) / f.name for f in files]
        for p, t in zip(paths, texts, strict=True):
            p.write_text(t, encoding="utf-8")
        with pytest.raises(ImpossibleCounters) as e:
            read_group(paths)
        ev = from_capture_files(paths, None, 60.0, 1.0)
    why = str(e.value)
    assert why.startswith(PLAUSIBILITY) and "\n" not in why, why
    assert ev.windows == [] and any(why in err for err in ev.errors), ev.errors
    return why


VL = 'vllm:spec_decode_num_{}_total{{engine="0",model_name="tiny"}}'
POS = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="tiny",position="{}"}}'
GEN = 'vllm:generation_tokens_total{engine="0",model_name="tiny"}'
SG = '{}{{engine_type="unified",{}model_name="tiny"}}'
SG_GEN = SG.format("sglang:generation_tokens_total", 'is_streaming="false",')
SG_VERIFY = SG.format("sglang:spec_verify_calls_total", "")


@FAST
@given(extra=st.integers(min_value=1, max_value=10**6), page=st.integers(min_value=1, max_value=2))
def test_more_accepted_than_drafted(extra: int, page: int) -> None:
    texts = [f.read_text() for f in VLLM]
    drafted = _value(texts[page], VL.format("draft_tokens"))
    texts[page] = _set(texts[page], VL.format("accepted_tokens"), drafted + extra)
    assert "value(s) no engine can report" in _refused(VLLM, texts)  # exporter.sanity leaves the counters out


@FAST
@given(extra=st.integers(min_value=1, max_value=10**6), pos=st.integers(min_value=0, max_value=2))
def test_a_position_accepted_more_often_than_there_were_drafts(extra: int, pos: int) -> None:
    texts = [f.read_text() for f in VLLM]
    drafts = _value(texts[2], VL.format("drafts"))
    texts[2] = _set(texts[2], POS.format(pos), drafts + extra)
    assert "value(s) no engine can report" in _refused(VLLM, texts)


@FAST
@given(short=st.floats(min_value=0.011, max_value=1.0), page=st.integers(min_value=1, max_value=2))
def test_fewer_generated_than_drafts_plus_accepted(short: float, page: int) -> None:
    texts = [f.read_text() for f in VLLM]
    need = _value(texts[page], VL.format("drafts")) + _value(texts[page], VL.format("accepted_tokens"))
    texts[page] = _set(texts[page], GEN, float(int(need * (1 - short))))
    assert "generated tokens <" in _refused(VLLM, texts)


@FAST
@given(extra=st.integers(min_value=1, max_value=10**5))
def test_sglang_more_verify_calls_than_generated_tokens_allow(extra: int) -> None:
    texts = [f.read_text() for f in SGLANG]
    gen = _value(texts[1], SG_GEN)
    finished = _value(texts[1], SG.format("sglang:num_requests_total", 'is_streaming="false",'))
    texts[1] = _set(texts[1], SG_VERIFY, gen - finished + extra)
    assert "verify calls +" in _refused(SGLANG, texts)


@FAST
@given(series=st.sampled_from([GEN, VL.format("drafts"), VL.format("draft_tokens"), VL.format("accepted_tokens")]),
       drop=st.integers(min_value=1, max_value=100))
def test_a_counter_that_went_down_in_one_process(series: str, drop: int) -> None:
    # during -> after of one process (the same process_start_time_seconds): `after` below `during`
    texts = [f.read_text() for f in VLLM]
    low = _value(texts[1], series) - drop
    texts[2] = _set(texts[2], series, low)
    # lowered below `during`, drafts and draft tokens also fall under the accepted counts (left out as impossible),
    # generated tokens under drafts + accepted: each way, refused
    assert _refused(VLLM, texts)


def test_a_counter_that_went_down_is_named() -> None:
    # prompt tokens: no identity of the page itself involves them, so only the fall is wrong
    texts = [f.read_text() for f in VLLM]
    prompt = 'vllm:prompt_tokens_total{engine="0",model_name="tiny"}'
    texts[2] = _set(texts[2], prompt, _value(texts[1], prompt) - 1)
    assert "counter prompt went down from 651 to 650 while the process start time stayed the same" \
        in _refused(VLLM, texts)


def test_a_changed_start_time_is_a_restart_not_an_impossibility() -> None:
    texts = [f.read_text() for f in VLLM]
    texts[2] = _set(texts[2], "process_start_time_seconds", 1.8e9)
    for name in ("drafts", "draft_tokens", "accepted_tokens"):
        texts[2] = _set(texts[2], VL.format(name), 0.0)
    for pos in range(3):
        texts[2] = _set(texts[2], POS.format(pos), 0.0)
    texts[2] = _set(texts[2], GEN, 0.0)
    with tempfile.TemporaryDirectory() as d:
        paths = [Path(d) / f.name for f in VLLM]
        for p, t in zip(paths, texts, strict=True):
            p.write_text(t, encoding="utf-8")
        read_group(paths)  # no ImpossibleCounters: the engine restarted (exporter.derive.restarted)


def test_the_old_seed004_page_is_refused() -> None:
    # the page as make_seed004_captures.py wrote it before issue 36: 256 output tokens x 6 repeats
    texts = [f.read_text() for f in SEED004]
    texts[1] = _set(texts[1], 'vllm:generation_tokens_total{engine="0",model_name="unsloth/Qwen3.6-35B-A3B-NVFP4-Fast"}',
                    1536.0)
    assert "1,536 generated tokens < 467 drafts + 1,103 accepted = 1,570" in _refused(SEED004, texts)


def test_tune_refuses_impossible_captures_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    texts = [f.read_text() for f in VLLM]
    texts[2] = _set(texts[2], VL.format("accepted_tokens"), 5000.0)
    with tempfile.TemporaryDirectory() as d:
        paths = [Path(d) / f.name for f in VLLM]
        for p, t in zip(paths, texts, strict=True):
            p.write_text(t, encoding="utf-8")
        assert main(["tune", "--captures", *map(str, paths)]) == 3
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and PLAUSIBILITY in err and "value(s) no engine can report" in err, err


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_real_captures_read_clean(name: str) -> None:
    files = CONTROLS[name]
    assert len(files) >= 2 and all(f.is_file() for f in files), files
    snaps, _ = read_group(files)
    assert len(snaps) == len(files)
