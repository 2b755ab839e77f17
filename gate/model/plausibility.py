"""Is a piece of evidence physically possible, recent and counted once? Pure functions, no I/O.

Why: the gate's decision is only as good as the numbers fed to it, and every source
(capture files, the exporter, a raw engine, Prometheus, Kubernetes, numbers reported in
the plan) can hand it numbers that no engine can produce — NaN, a negative count, an
acceptance length above what the draft depth allows, a window dated 1970 or 2500, the
same window a thousand times. Such evidence must make the line **inconclusive with the
reason**, never pass. Each function here answers one question about one piece of typed
evidence and returns `None` when it is plausible, or an `Implausible` finding with the
reason and the numbers.

The physics of acceptance (vLLM's definitions, DESIGN.md "Derived quantities"): with k
draft tokens proposed per draft round,

    L = 1 + accepted / drafts                 accepted ≤ k · drafts  ⇒  1 ≤ L ≤ 1 + k
    a = accepted / draft_tokens               0 ≤ a ≤ 1
    draft_tokens ≤ k · drafts                 ⇒  a ≥ accepted / (k · drafts) = (L − 1) / k

A fixed-depth drafter (draft model, EAGLE, MTP, DFlash) proposes exactly k per round, so
a = (L − 1)/k; a variable-length proposer (ngram, suffix) proposes fewer when its lookup
finds fewer, so a may exceed (L − 1)/k — but never fall below it. k is vLLM's
`num_speculative_tokens`; for SGLang it is `num_draft_tokens − 1` (the verify block
includes the root token). Where the depth varies by a declared schedule (vLLM's k by batch size,
SGLang's adaptive steps; gate.model.depth.bound_depth) every draft proposes at most the largest k
the schedule allows, so the bounds hold with that k_max: 1 ≤ L ≤ 1 + k_max, a ≥ (L − 1)/k_max.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

from gate.model.depth import VARIABLE_LENGTH_METHODS

# Rounding allowance for ratios: reported values are rounded (a launch log's "3.24") and
# Prometheus' increase() extrapolates each series; a genuine impossibility is far larger.
TOLERANCE = 1e-3
# How far in the future a window may end before the clocks are not to be trusted (NTP keeps
# nodes within milliseconds; a minute covers a badly synchronised laptop running the CLI).
CLOCK_SKEW_SECONDS = 60.0
# No engine holds more tokens of KV than this in one pool (an 8 × 141 GB node at 1 KiB per
# token is ~1.1e9): beyond it the number is a unit error or garbage.
MAX_POOL_TOKENS = 10**11
# A cold start longer than a day is not a startup, it is a failed deployment.
MAX_STARTUP_SECONDS = 86_400.0
# No deployment serves this many tokens per second (the largest serve 10^5–10^6 summed over every
# request; 10^7 leaves an order of magnitude): a probe cell's rate above it is a unit error or garbage.
MAX_SERVED_TOKENS_PER_SECOND = 1e7
# A probe cell's served rate is written as output_tokens / wall_seconds; rounding or re-serialising moves
# the two apart by far less than this share, a rate from elsewhere by more.
RATE_CONSISTENCY = 0.01
# Two probe arms are one experiment, measured one after the other on one host: a day holds a campaign
# of many mixes and repetitions run arm after arm; further apart, another build, another load or another
# machine may have come between them, and the difference would measure that instead of the speculation.
PROBE_ARMS_MAX_APART_SECONDS = 86_400.0
# A post-phase pass speaks of the deployment now: probe records older than a day are history (as
# pre-rollout captures are), not evidence of the rollout.
PROBE_MAX_AGE_SECONDS = 86_400.0
# The rank test's significance level (`slo.alpha`, `specgate compare --alpha`): the usual levels are
# 0.01–0.1; above 0.2 more than one no-difference point in five would be called a speedup (or a slowdown).
MAX_ALPHA = 0.2
DEFAULT_ALPHA = 0.05  # the level when the plan or the command line says none
# No evidence the gate reads (a run record, a probe record, a capture) predates 2024-01-01T00:00Z: no engine
# it reads exposed speculative-decoding counters before that; an earlier date is a zero, a unit error or garbage.
EARLIEST_EVIDENCE_TIME = 1_704_067_200.0



@dataclass(frozen=True)
class Implausible:
    """Why one piece of evidence cannot be believed, with the numbers that show it."""

    kind: str  # non_finite | negative | out_of_range | impossible | stale | future | undated | duplicate
    reason: str
    numbers: dict[str, float | None] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.reason


class WindowLike(Protocol):
    """What the window checks read from a window (gate.evidence's AcceptanceWindow has it)."""

    @property
    def source(self) -> str: ...
    @property
    def stream(self) -> str: ...
    @property
    def point(self) -> str | None: ...
    @property
    def start(self) -> float | None: ...
    @property
    def end(self) -> float | None: ...
    @property
    def drafts(self) -> float | None: ...
    @property
    def acceptance_length(self) -> float | None: ...
    @property
    def acceptance_rate(self) -> float | None: ...


W = TypeVar("W", bound=WindowLike)


def _g(x: float | None) -> str:
    return "unknown" if x is None else f"{x:.6g}"


def number(name: str, value: float | None, *, low: float = 0.0, high: float | None = None,
           low_inclusive: bool = True, where: str = "") -> Implausible | None:
    """A finite value in [low, high] (or (low, high] when not `low_inclusive`); None is no finding."""
    if value is None:
        return None
    at = f" ({where})" if where else ""
    nums: dict[str, float | None] = {name: value, "low": low, "high": high}
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return Implausible("non_finite", f"{name} {value!r} is not a finite number{at}", nums)
    if value < low or (not low_inclusive and value == low):
        kind = "negative" if value < 0 else "out_of_range"
        bound = "≥" if low_inclusive else ">"
        return Implausible(kind, f"{name} {_g(value)} must be {bound} {_g(low)}{at}", nums)
    if high is not None and value > high:
        return Implausible("out_of_range", f"{name} {_g(value)} is above the sane bound {_g(high)}{at}", nums)
    return None


def acceptance(length: float | None, rate: float | None, k: int | None, *, method: str | None = None,
               where: str = "") -> Implausible | None:
    """L and a of one window (or one report) are finite and possible at depth k.

    1 ≤ L ≤ 1 + k; 0 ≤ a ≤ 1; a ≥ (L − 1)/k for every proposer (the module docstring derives
    it; variable-length proposers may lie above it, fixed-depth ones sit on it).
    """
    at = f" ({where})" if where else ""
    for name, v in (("acceptance length", length), ("acceptance rate", rate)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)):
            return Implausible("non_finite", f"{name} {v!r} is not a finite number{at}", {name: None})
    nums: dict[str, float | None] = {"acceptance_length": length, "acceptance_rate": rate,
                                     "k": None if k is None else float(k)}
    if length is not None and length < 1.0 - TOLERANCE:
        return Implausible("impossible", f"acceptance length {_g(length)} < 1 (L = 1 + accepted/drafts){at}", nums)
    if rate is not None and not (-TOLERANCE <= rate <= 1.0 + TOLERANCE):
        return Implausible("impossible", f"acceptance rate {_g(rate)} is outside 0..1{at}", nums)
    if k is None or k <= 0:
        return None
    if length is not None and length > 1.0 + k + TOLERANCE:
        return Implausible("impossible", f"acceptance length {_g(length)} > 1 + k = {1 + k} "
                           f"(at most k = {k} drafted tokens are accepted per verify){at}", nums)
    if length is not None and rate is not None:
        floor = (length - 1.0) / k
        nums["rate_floor"] = floor
        if rate < floor - TOLERANCE:
            kind = "variable-length " if method in VARIABLE_LENGTH_METHODS else ""
            return Implausible("impossible", f"acceptance rate {_g(rate)} < (L − 1)/k = ({_g(length)} − 1)/{k} = "
                               f"{floor:.4f}: no {kind}proposer of depth {k} can produce both{at}", nums)
    return None


def window_values(w: WindowLike, k: int | None, method: str | None = None) -> Implausible | None:
    """A window's drafts, L and a: finite, non-negative, possible at depth k."""
    where = f"{w.source}, {w.stream}"
    return (number("drafts", w.drafts, where=where)
            or number("window start", w.start, where=where)
            or number("window end", w.end, where=where)
            or acceptance(w.acceptance_length, w.acceptance_rate, k, method=method, where=where))


def recency(end: float | None, now: float, lookback_seconds: float, *, where: str = "",
            skew_seconds: float = CLOCK_SKEW_SECONDS, require_recent: bool = True) -> Implausible | None:
    """A window ends within `lookback_seconds` before `now` and not after `now + skew`.

    `require_recent=False` keeps only the future check and the 2024 floor (pre-rollout captures are
    historic by nature, but a capture from the future, or from before any engine counted drafts as
    the gate reads them, is impossible). An undated window is not
    live evidence when recency is required.
    """
    at = f" ({where})" if where else ""
    if end is None:
        if require_recent:
            return Implausible("undated", f"window has no end time, so it cannot be shown to be recent{at}",
                               {"end": None, "now": now})
        return None
    if not math.isfinite(end):
        return Implausible("non_finite", f"window end {end!r} is not a finite time{at}", {"end": None})
    nums: dict[str, float | None] = {"end": end, "now": now, "lookback_seconds": lookback_seconds,
                                     "skew_seconds": skew_seconds}
    if end > now + skew_seconds:
        return Implausible("future", f"window ends {end - now:,.0f} s after the evaluation time "
                           f"(clock-skew allowance {skew_seconds:g} s){at}", nums)
    if not require_recent and end < EARLIEST_EVIDENCE_TIME:  # historic is allowed, before any evidence is not
        return Implausible("ancient", f"window ends at {end:.0f}, before 2024-01-01 "
                           f"({EARLIEST_EVIDENCE_TIME:.0f}): older than any evidence the gate reads{at}", nums)
    if require_recent and end < now - lookback_seconds:
        return Implausible("stale", f"window ended {now - end:,.0f} s before the evaluation time, "
                           f"outside lookback_seconds {lookback_seconds:g}{at}", nums)
    return None


def instant(text: str) -> float:
    """An ISO 8601 date and time with a zone as seconds since the epoch (`Z` or an offset).

    ValueError with the reason when it is no date, or names no instant (a naive time: its zone is unknown);
    whether the instant is plausible is `evidence_time`'s question.
    """
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("is not an ISO 8601 date") from None
    if dt.tzinfo is None:
        raise ValueError("has no time zone, so it names no instant")
    return dt.timestamp()


def evidence_time(t: float | None, now: float, what: str, *, skew_seconds: float = CLOCK_SKEW_SECONDS
                  ) -> Implausible | None:
    """A time written into a piece of evidence (seconds since the epoch): known, finite, not before
    EARLIEST_EVIDENCE_TIME and not after `now + skew` (1970, -1e12 and next year are not dates of evidence)."""
    if t is None:
        return Implausible("undated", f"{what}: no time, so it cannot be ordered against other evidence")
    if not math.isfinite(t):
        return Implausible("non_finite", f"{what}: time {t!r} is not finite", {"time": None})
    nums: dict[str, float | None] = {"time": t, "now": now, "earliest": EARLIEST_EVIDENCE_TIME}
    if t < EARLIEST_EVIDENCE_TIME:
        return Implausible("out_of_range", f"{what}: time {t:.0f} lies before 2024-01-01 "
                           f"({EARLIEST_EVIDENCE_TIME:.0f}), older than any evidence the gate reads", nums)
    if t > now + skew_seconds:
        return Implausible("future", f"{what}: time lies {t - now:,.0f} s after now (clock-skew allowance "
                           f"{skew_seconds:g} s)", nums)
    return None


def window_key(w: WindowLike) -> Hashable:
    """What makes a window one window: its operating point, stream, interval and values — not its source's name.

    Not the name (issue 34, uniqueness "whatever their names"): one sidecar reached by two spellings of its URL,
    or one capture group copied to other file names, gives the same windows twice. The values are part of it
    because capture files are dated by their modification time, which a checkout can make equal for every file:
    two capture groups with other counters are still two windows.
    """
    return (w.point, w.stream, w.start, w.end, w.drafts, w.acceptance_length, w.acceptance_rate)


def distinct(windows: Sequence[W]) -> tuple[list[W], Implausible | None]:
    """Each window counted once: repeats (same point, stream, interval and values, from any source) are dropped.

    The finding says how many repeats there were; the caller decides what they mean for the
    line (a source that repeats itself is not to be trusted for a count of windows).
    """
    seen: set[Hashable] = set()
    kept: list[W] = []
    repeats = 0
    for w in windows:
        key = window_key(w)
        if key in seen:
            repeats += 1
            continue
        seen.add(key)
        kept.append(w)
    if not repeats:
        return kept, None
    return kept, Implausible("duplicate", f"{repeats} repeated window(s) counted once ({len(kept)} distinct of "
                             f"{len(windows)})", {"windows": float(len(windows)), "distinct": float(len(kept))})


def overlapping(windows: Iterable[WindowLike]) -> Implausible | None:
    """Windows of one stream and source whose intervals overlap count some drafts twice."""
    by: dict[tuple[str, str | None, str], list[tuple[float, float]]] = {}
    for w in windows:
        if w.start is not None and w.end is not None:
            by.setdefault((w.source, w.point, w.stream), []).append((w.start, w.end))
    for (source, _, stream), spans in by.items():
        spans.sort()
        for (s0, e0), (s1, e1) in zip(spans, spans[1:], strict=False):
            if s1 < e0 - TOLERANCE:
                return Implausible("impossible", f"windows [{s0:.0f}, {e0:.0f}] and [{s1:.0f}, {e1:.0f}] of "
                                   f"{stream} ({source}) overlap: their drafts would be counted twice",
                                   {"first_end": e0, "second_start": s1})
    return None


def pool_tokens(tokens: float | None, where: str = "") -> Implausible | None:
    """An allocated KV pool: a positive whole number of tokens below MAX_POOL_TOKENS."""
    found = number("KV pool tokens", tokens, low=0.0, high=float(MAX_POOL_TOKENS), low_inclusive=False, where=where)
    if found is None and tokens is not None and float(tokens) != int(tokens):
        return Implausible("impossible", f"KV pool tokens {tokens!r} is not a whole number"
                           + (f" ({where})" if where else ""), {"tokens": float(tokens)})
    return found


def startup_seconds(seconds: float | None, where: str = "") -> Implausible | None:
    """A cold start: positive and at most MAX_STARTUP_SECONDS."""
    return number("startup seconds", seconds, low=0.0, high=MAX_STARTUP_SECONDS, low_inclusive=False, where=where)


def served_rates(samples: Iterable[float], name: str, where: str = "") -> Implausible | None:
    """Served-rate samples of one arm: each finite and positive (a rate of 0 is a failed run)."""
    for v in samples:
        found = number(name, v, low=0.0, low_inclusive=False, where=where)
        if found is not None:
            return found
    return None


# A cell is consistent with its mix (issue 34, plausibility): its requests got the tokens the mix declares.
# Prompts the probe built from the engine's own tokenizer are sent as exactly `prompt_tokens` ids; an engine may
# count a few more (a BOS or chat-template special token: vllm bench's random prompts of 32 show 32–34), and a
# long prompt re-tokenized at its rotations may drift by a share: within max(8 tokens, 1 %) is the same prompt.
PROMPT_SLACK_TOKENS = 8
PROMPT_SLACK_SHARE = 0.01
# `approximate_words` prompts are that many words, not tokens (the engine had no /tokenize): a common English word
# is half to four tokens in every tokenizer in use (byte-level BPE splits "speculative" in 2–3), so the engine's
# count per request lies within this band of the declared number, and a 20,000-token prompt under a 128-word mix
# lies far outside it.
WORD_TOKENS_BAND = (0.5, 4.0)
# Where the probe wrote the record it sent `ignore_eos` with max_tokens = the mix's output tokens and refused any
# other count (gate.probe.client.token_problem), so each completed request got exactly that many. An imported
# benchmark's mix is its largest request (gate.probe.importers.build_record), and a run without --ignore-eos may
# stop a few requests early: on average at least this share of the declared output, else it measured another mix.
IMPORTED_OUTPUT_SHARE = 0.9
# The prompt sources `specgate probe` itself writes (gate.probe.workload); anything else was imported or written by
# hand, and holds its outputs only to IMPORTED_OUTPUT_SHARE.
PROBE_PROMPT_SOURCES = ("engine_tokenizer", "approximate_words")


def _probe_written(prompts_from: str) -> bool:
    return prompts_from in PROBE_PROMPT_SOURCES or prompts_from.startswith("jsonl:")


def cell_mix(*, requests: int, failed: int, output_tokens: int, prompt_tokens: int | None, mix_output: int,
             mix_prompt: int | None, prompts_from: str, where: str = "") -> Implausible | None:
    """A cell's tokens per completed request are what its mix declares (the constants above give each tolerance).

    Output: exactly `mix_output` per completed request where the probe wrote the record (ignore_eos), at least
    IMPORTED_OUTPUT_SHARE of it on average otherwise (never more: the mix is the largest request). Prompt, where
    the mix declares a length: the cell's engine-counted prompt tokens per completed request within
    max(PROMPT_SLACK_TOKENS, PROMPT_SLACK_SHARE) of it (WORD_TOKENS_BAND for `approximate_words`). A cell with
    completed requests and no prompt count under a mix that declares one cannot be shown to be that mix: a
    finding too (unknown is never "the same"). A mix without a prompt length (the user's own prompts, an
    import of mixed lengths) leaves the prompt unchecked; `gate.evidence.probe_vetting.pair_defects` refuses
    that on both arms.
    """
    at = f" ({where})" if where else ""
    done = requests - failed
    nums: dict[str, float | None] = {"requests": float(requests), "completed": float(done),
                                     "output_tokens": float(output_tokens), "mix_output_tokens": float(mix_output),
                                     "prompt_tokens": None if prompt_tokens is None else float(prompt_tokens),
                                     "mix_prompt_tokens": None if mix_prompt is None else float(mix_prompt)}
    if done <= 0:
        if output_tokens:
            return Implausible("impossible", f"{output_tokens} output tokens from no completed request{at}", nums)
        return None
    per_out = output_tokens / done
    if _probe_written(prompts_from):
        if output_tokens != done * mix_output:
            return Implausible("impossible", f"{output_tokens} output tokens for {done} completed requests = "
                               f"{per_out:.6g} per request, not the mix's {mix_output} (the probe sends ignore_eos: "
                               f"each completed request gets exactly that many){at}", nums)
    elif per_out > mix_output or per_out < IMPORTED_OUTPUT_SHARE * mix_output:
        return Implausible("impossible", f"{output_tokens} output tokens for {done} completed requests = "
                           f"{per_out:.6g} per request, not the mix's {mix_output} (an imported run holds at least "
                           f"{IMPORTED_OUTPUT_SHARE:.0%} of it on average and never more){at}", nums)
    if mix_prompt is None:
        return None
    if prompt_tokens is None:
        return Implausible("impossible", f"no prompt token count for {done} completed requests under a mix of "
                           f"{mix_prompt}-token prompts: the cell cannot be shown to have served its mix{at}", nums)
    per_prompt = prompt_tokens / done
    if prompts_from == "approximate_words":
        low, high = WORD_TOKENS_BAND[0] * mix_prompt, WORD_TOKENS_BAND[1] * mix_prompt
        told = f"{WORD_TOKENS_BAND[0]:g}–{WORD_TOKENS_BAND[1]:g} tokens per word of the mix's {mix_prompt} words"
    else:
        slack = max(PROMPT_SLACK_TOKENS, PROMPT_SLACK_SHARE * mix_prompt)
        low, high = mix_prompt - slack, mix_prompt + slack
        told = f"the mix's {mix_prompt} within {slack:g} tokens"
    if not low <= per_prompt <= high:
        return Implausible("impossible", f"{prompt_tokens} prompt tokens for {done} completed requests = "
                           f"{per_prompt:.6g} per request, not {told}{at}", nums)
    return None


# Counter identities of one engine page (issue 34, plausibility). vLLM and llama.cpp count a verify round's drafted and
# accepted tokens before a request is cut at max_tokens (vLLM's scheduler takes its spec stats from the sampled ids,
# then truncates at the stop): the last round of a request may count up to k − 1 accepted tokens more than it
# emitted, net of the request's prefill token. On requests of a few hundred tokens that is under 1 % of what was
# generated (the real vLLM 0.32 draft-model windows in tests/fixtures lose 4 of 1,420); more is not one engine's count.
GENERATED_SLACK_SHARE = 0.01


def capture_counters(*, generated: float | None, drafts: float | None, draft_tokens: float | None,
                     accepted: float | None, per_position: Sequence[float] = (), verify_calls: float | None = None,
                     finished: float | None = None, where: str = "") -> Implausible | None:
    """The identities one engine page's cumulative counters must satisfy (None: they do, or cannot be checked).

    - accepted ≤ draft tokens: a token is accepted only after it was drafted;
    - each position's accepted count ≤ drafts: one round accepts a position at most once;
    - generated ≥ drafts + accepted (vLLM, llama.cpp: every verify round emits its accepted tokens and one of the
      target's; GENERATED_SLACK_SHARE for the cut at max_tokens);
    - generated ≥ verify calls + finished requests (SGLang, which counts verify calls: each request's first token
      comes from prefill, each verify emits at least one; exact, `exporter.engines.sglang.counts` derives accepted
      as their difference and would hide a negative one as 0).
    """
    at = f" ({where})" if where else ""
    nums: dict[str, float | None] = {"generated": generated, "drafts": drafts, "draft_tokens": draft_tokens,
                                     "accepted": accepted, "verify_calls": verify_calls, "finished": finished}
    if accepted is not None and draft_tokens is not None and accepted > draft_tokens:
        return Implausible("impossible", f"{accepted:,.0f} accepted tokens of {draft_tokens:,.0f} drafted: a token is "
                           f"accepted only after it was drafted{at}", nums)
    if drafts is not None:
        for i, n in enumerate(per_position):
            if n > drafts:
                return Implausible("impossible", f"position {i} accepted {n:,.0f} times in {drafts:,.0f} drafts: one "
                                   f"round accepts a position at most once{at}", nums)
    if generated is not None and drafts is not None and accepted is not None:
        need = drafts + accepted
        if generated < need * (1.0 - GENERATED_SLACK_SHARE):
            return Implausible("impossible", f"{generated:,.0f} generated tokens < {drafts:,.0f} drafts + "
                               f"{accepted:,.0f} accepted = {need:,.0f}: every verify round emits its accepted "
                               f"tokens and one of the target's (allowance {GENERATED_SLACK_SHARE:.0%} for requests cut "
                               f"at max_tokens){at}", nums)
    if generated is not None and verify_calls is not None and finished is not None \
            and generated < verify_calls + finished:
        return Implausible("impossible", f"{generated:,.0f} generated tokens < {verify_calls:,.0f} verify calls + "
                           f"{finished:,.0f} finished requests: each request's first token comes from prefill and "
                           f"each verify emits at least one{at}", nums)
    return None


def counters_grew(before: Mapping[str, float | None], after: Mapping[str, float | None], *,
                  where: str = "") -> Implausible | None:
    """Cumulative counters of one process between two pages, name by name: none went down (a restart is told by a
    changed process start time; with the same start, a lower counter is not one process's count)."""
    at = f" ({where})" if where else ""
    for name, b in before.items():
        a = after.get(name)
        if a is not None and b is not None and a < b:
            return Implausible("impossible", f"counter {name} went down from {b:,.6g} to {a:,.6g} while the process "
                               f"start time stayed the same{at}", {"before": b, "after": a})
    return None
