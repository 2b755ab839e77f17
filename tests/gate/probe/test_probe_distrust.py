"""The probe trusts nothing the engine says (issue 21, item 2), against the loopback replay of real vLLM streams
(tests/gate/probe/probe_replay.py) made to lie or stall on purpose.

Each case is a class, with other numbers than the issue's reproduction: a usage that claims more (or fewer)
tokens than were asked for or streamed fails the request; a cell whose tokens the engine's own generation
counter does not hold ends the campaign (exit 3, no record); every HTTP read ends at its deadline (a dripping
stream, `/v1/models`, `/version`); a lying `/tokenize` cannot grow the prompt or the answer without bound; the
campaign's bounds are checked before the first request or tokenize call; the time limit stops requests in flight.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.evidence.probes import load_record
from gate.probe import runner
from gate.probe.client import CompletionClient, token_problem
from gate.probe.workload import token_prompts
from tests.gate.probe.probe_replay import ReplayEngine

NGRAM = '{"method":"ngram","num_speculative_tokens":3}'
# --no-client-ceiling: these tests are about what the engine says, not the client's ceiling (a null engine's start,
# ~0.3-1 s a probe; test_instrument.py and test_compare_vetting's control measure it)
ONE_CELL = ("--prompt-tokens", "8", "--output-tokens", "16", "--concurrency", "1", "--repetitions", "1",
            "--requests", "1", "--warmup", "0", "--no-client-ceiling")


def probe(tmp_path: Path, url: str, *extra: str, arm: str = "baseline") -> tuple[int, Path]:
    out = tmp_path / f"{arm}.json"
    args = ["probe", "--engine-url", url, "--arm", arm, "--out", str(out), *extra]
    if arm == "speculative":
        args += ["--speculative-config", NGRAM]
    try:
        return main(args), out
    except SystemExit as e:
        return int(e.code or 0), out


def edited(events: list[list[Any]], usage: dict[str, Any] | None = None, ids: int | None = None) -> list[list[Any]]:
    """The capture's events with the usage's fields replaced and, with `ids`, token ids on every text chunk
    (one each, the rest on the last) adding up to `ids`."""
    out = [list(e) for e in events]
    choice_rows = [i for i, (_, line) in enumerate(out) if '"choices":[{' in line]
    for i, (_, line) in enumerate(out):
        if not line.startswith("data: {"):
            continue
        doc = json.loads(line[6:])
        if usage is not None and isinstance(doc.get("usage"), dict):
            doc["usage"].update(usage)
        if ids is not None and i in choice_rows:
            n = 1 if i != choice_rows[-1] else ids - (len(choice_rows) - 1)
            doc["choices"][0]["token_ids"] = list(range(n))
        out[i][1] = "data: " + json.dumps(doc)
    return out


def one_line(err: str) -> str:
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("claimed", [160, 48, 15])
def test_a_usage_that_is_not_max_tokens_fails_the_request(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          claimed: int) -> None:
    """ignore_eos: the engine must serve exactly max_tokens; 10x (or 3x, or one short) is a failed request, so
    the record cannot carry the claimed output (issue 21: 10x max_tokens "paid" 10.2x)."""
    with ReplayEngine("ngram", slow=0.1) as eng:
        eng.state.capture["events"] = edited(eng.state.capture["events"], usage={"completion_tokens": claimed})
        rc, out = probe(tmp_path, eng.url, *ONE_CELL, "--warmup", "1", arm="speculative")
    err = one_line(capsys.readouterr().err)
    assert rc == 3 and not out.exists()
    assert f"usage.completion_tokens is {claimed}, but the request asked for exactly 16 (ignore_eos)" in err


def test_a_usage_that_is_not_the_streamed_ids_fails_and_a_true_one_passes(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with ReplayEngine("nospec", slow=0.1) as eng:
        events = eng.state.capture["events"]
        eng.state.capture["events"] = edited(events, ids=13)  # usage says 16
        rc, out = probe(tmp_path, eng.url, *ONE_CELL)
        assert rc == 3 and "usage.completion_tokens is 16, but the stream carried 13 token ids" in one_line(
            capsys.readouterr().err)
        eng.state.capture["events"] = edited(events, ids=16)
        rc, out = probe(tmp_path, eng.url, *ONE_CELL)
    assert rc == 0, capsys.readouterr().err
    cell = load_record(out).cells[0]
    assert cell.output_tokens == 16 and cell.failed_requests == 0


@pytest.mark.parametrize("usage, ids, max_tokens, why", [
    (12, 12, 16, None),  # stopped early, and the stream says so
    (12, 16, 16, "the stream carried 16 token ids"),
    (20, None, 16, "more than max_tokens 16"),
    (5, None, 16, "11 chunks carried text"),  # the capture's stream has 11 text chunks: at least 11 tokens
    (16, None, 32, None),  # no ids streamed: the reported count only bounded by the chunks
])
def test_without_ignore_eos_the_count_must_be_what_was_streamed(usage: int, ids: int | None, max_tokens: int,
                                                                 why: str | None) -> None:
    with ReplayEngine("nospec", slow=0.05) as eng:
        eng.state.capture["events"] = edited(eng.state.capture["events"], usage={"completion_tokens": usage}, ids=ids)
        r = CompletionClient(eng.url, "m", ignore_eos=False).complete([1, 2, 3], max_tokens)
    assert r.ok == (why is None) and (why is None or why in (r.error or ""))
    assert r.completion_tokens == (usage if why is None else None)


def test_token_rule_table() -> None:
    assert token_problem(16, 16, 16, 9, ignore_eos=True) is None
    assert token_problem(16, 16, None, 9, ignore_eos=True) is None
    assert "exactly 16" in (token_problem(17, 16, 17, 9, ignore_eos=True) or "")
    assert "8 chunks carried text" in (token_problem(7, 16, None, 8, ignore_eos=False) or "")


def _gen_scaled(factor: float) -> Callable[[str], str]:
    pat = re.compile(r'^(vllm:generation_tokens_total\{[^}]*\}) (\S+)$', re.M)
    return lambda page: pat.sub(lambda m: f"{m.group(1)} {float(m.group(2)) * factor!r}", page)


@pytest.mark.parametrize("fault", ["frozen", "half"])
def test_a_cell_the_engines_counter_does_not_hold_ends_the_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    fault: str) -> None:
    """Answers that claim tokens the engine never counted: the usage is max_tokens, the generation counter
    rose by less (not at all, or half) — the record would be the engine's word against its own counters."""
    monkeypatch.setattr(runner, "SETTLE_SECONDS", 0.2)
    faults: dict[str, Any] = {"frozen": True} if fault == "frozen" else {"edit_page": _gen_scaled(0.5)}
    with ReplayEngine("nospec", slow=0.1, **faults) as eng:
        rc, out = probe(tmp_path, eng.url, *ONE_CELL, "--requests", "2")
    err = one_line(capsys.readouterr().err)
    assert rc == 3 and not out.exists()
    rose = "0" if fault == "frozen" else "16"
    assert f"the requests report 32 completion tokens, the engine's own generation counter rose by {rose}" in err


def test_an_engine_without_a_generation_counter_is_checked_by_the_streams_and_told_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    drop = re.compile(r"^vllm:generation_tokens_total.*\n", re.M)
    with ReplayEngine("nospec", slow=0.1, edit_page=lambda page: drop.sub("", page)) as eng:
        rc, out = probe(tmp_path, eng.url, *ONE_CELL, "--repetitions", "3")
    err = capsys.readouterr().err
    assert rc == 0, err
    assert len(load_record(out).cells) == 3
    assert err.count("has no generation-token counter for model m") == 1


def test_a_dripping_stream_ends_at_the_request_timeout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ReplayEngine("nospec", drip=frozenset({"/v1/completions"})) as eng:
        t0 = time.monotonic()
        rc, out = probe(tmp_path, eng.url, *ONE_CELL, "--warmup", "2", "--request-timeout", "0.4")
        took = time.monotonic() - t0
    assert rc == 3 and not out.exists() and took < 3
    assert "every warm-up request failed: timed out after 0.4 s" in one_line(capsys.readouterr().err)


def test_the_time_limit_stops_requests_in_flight(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A request that would take ~20 s (the capture's stream stretched 20x) under --time-limit 1.5: the run ends
    at the limit, not after the request."""
    with ReplayEngine("nospec", slow=20) as eng:
        t0 = time.monotonic()
        rc, out = probe(tmp_path, eng.url, *ONE_CELL, "--time-limit", "1.5")
        took = time.monotonic() - t0
    assert rc == 3 and not out.exists() and took < 3.5
    err = one_line(capsys.readouterr().err)
    assert "time limit 1.5 s reached after 0 of 1 cells" in err and "no record written" in err


@pytest.mark.parametrize("flags, words", [(("--request-timeout", "0.4"), "gave no model"),
                                          (("--time-limit", "0.6"), "time limit 0.6 s reached before the first cell")])
def test_a_dripping_models_endpoint_ends_at_its_deadline(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         flags: tuple[str, ...], words: str) -> None:
    with ReplayEngine("nospec", drip=frozenset({"/v1/models"})) as eng:
        t0 = time.monotonic()
        out = tmp_path / "b.json"
        rc = main(["probe", "--engine-url", eng.url, "--arm", "baseline", "--out", str(out), *ONE_CELL, *flags])
        took = time.monotonic() - t0
        assert eng.state.completions_started == 0
    assert rc == 3 and took < 2.5 and words in one_line(capsys.readouterr().err)


def test_a_dripping_version_endpoint_is_skipped_at_its_deadline(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    with ReplayEngine("nospec", slow=0.05, drip=frozenset({"/version"})) as eng:
        t0 = time.monotonic()
        rc, out = probe(tmp_path, eng.url, *ONE_CELL, "--request-timeout", "0.4")
        took = time.monotonic() - t0
    assert rc == 0, capsys.readouterr().err
    assert took < 3.5 and load_record(out).engine_version is None  # unknown, not waited for


def test_a_tokenizer_that_never_gives_enough_ids_stops_growing_the_text(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A /tokenize whose ids grow with the text but never reach the length (one id per 20 words): the text
    grows to at most MAX_WORDS_PER_TOKEN words per wanted id, a handful of calls, then one line."""
    def few(body: dict[str, Any]) -> bytes:
        text = body.get("prompt") or body.get("content") or ""  # both spellings (gate.probe.workload.TOKENIZE_BODIES)
        return json.dumps({"tokens": list(range(len(text.split()) // 20))}).encode()

    with ReplayEngine("nospec", tokenize=few) as eng:
        rc, _ = probe(tmp_path, eng.url, "--prompt-tokens", "40", "--output-tokens", "16", "--concurrency", "1")
        calls = eng.state.tokenize_calls
    assert rc == 3 and calls <= 6
    assert "cannot build a 40-token prompt" in one_line(capsys.readouterr().err)


def test_an_oversized_tokenize_answer_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = json.dumps({"tokens": list(range(300_000))}).encode()  # 2.3 MB for a 16-word text
    with ReplayEngine("nospec", tokenize=lambda body: big) as eng:
        rc, _ = probe(tmp_path, eng.url, *ONE_CELL)
    err = one_line(capsys.readouterr().err)
    assert rc == 3 and "/tokenize" in err and "bytes" in err


def test_llamacpp_tokenize_spelling() -> None:
    """llama-server b11434 reads `/tokenize` `{"content"}` and answers `{"tokens": []}` to vLLM's `{"prompt"}`
    (server-context.cpp post_tokenize): the probe asks again in that spelling and gets exact-length prompts."""
    seen: list[str] = []

    def llamacpp(body: dict[str, Any]) -> bytes:
        seen.append("content" if "content" in body else "prompt")
        return json.dumps({"tokens": list(range(len(body.get("content", "").split())))}).encode()

    with ReplayEngine("nospec", tokenize=llamacpp) as eng:
        prompts, how = token_prompts(eng.url, "m", 8, 4, 5.0)
    assert how == "engine_tokenizer" and all(len(p) == 8 for p in prompts), prompts
    assert seen[:2] == ["prompt", "content"]


def test_each_distinct_text_is_tokenized_once() -> None:
    with ReplayEngine("nospec") as eng:
        prompts, how = token_prompts(eng.url, "m", 8, 500, 5.0)
        calls = eng.state.tokenize_calls
    assert how == "engine_tokenizer" and len(prompts) == 500 and calls == 32  # 32 rotations of the text


@pytest.mark.parametrize("extra, words", [
    (("--concurrency", "60000"), "more than --max-requests 5000"),
    (("--concurrency", "1,40", "--max-requests", "100"), "more than --max-requests 100"),
    (("--concurrency", "4", "--requests", "3"), "--requests 3 is fewer than concurrency 4"),
])
def test_bounds_are_refused_before_any_request_or_tokenize_call(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 extra: tuple[str, ...], words: str) -> None:
    with ReplayEngine("nospec") as eng:
        t0 = time.monotonic()
        rc, out = probe(tmp_path, eng.url, "--prompt-tokens", "8", "--output-tokens", "16", *extra)
        took = time.monotonic() - t0
        assert (eng.state.tokenize_calls, eng.state.completions_started, eng.state.gets) == (0, 0, [])
    assert rc == 3 and not out.exists() and took < 1.0
    assert words in one_line(capsys.readouterr().err)


def test_a_plan_mix_at_its_own_concurrency_is_held_to_requests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("name: t\ntarget: {name: tiny}\nengine: {kind: vllm}\n"
                    "workload:\n  - {name: chat, concurrency: 6, prompt_tokens: 8, output_tokens: 16}\n")
    with ReplayEngine("nospec") as eng:
        rc, _ = probe(tmp_path, eng.url, "--plan", str(plan), "--requests", "5")
        assert eng.state.gets == []
    assert rc == 3 and "--requests 5 is fewer than concurrency 6 (mix chat)" in one_line(capsys.readouterr().err)
