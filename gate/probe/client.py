"""A streaming `/v1/completions` client that times each request on the client side.

Why the client times, not the engine: the served rate a user sees includes queueing and
first-token waiting (seed 000), and both engines stream OpenAI-compatible server-sent events,
so the same client measures vLLM and SGLang alike. One request = one POST with
`"stream": true` and `"stream_options": {"include_usage": true}`: the final chunk carries
`usage.completion_tokens` (the token count; a speculative arm streams several tokens per
chunk, so chunks are not tokens). The request's own acceptance, where the engine reports it, is
parsed by `gate.probe.per_request.streamed_acceptance` (validated, fail-closed): vLLM started with
`--per-request-spec-decode-metrics` puts `metrics.speculative_decoding` on the usage chunk; SGLang
(asked by `return_spec_tokens_details`, a field vLLM ignores) sends an `sglext.spec_tokens_details`
chunk before it. A request whose numbers the parser refuses has no L (`acceptance_length` None) and
says why (`acceptance_refused`); nothing is made up.

Times are `time.monotonic()`: `sent` before the POST, one entry per chunk that carries a
choice (the first one is the first token: TTFT = first − sent), `end` after `[DONE]`.
TPOT of a request = (last chunk − first chunk) / (completion_tokens − 1), the engines' own
definition. Every request is one bounded exchange (`gate.inputs.fetch.stream`): one total deadline
(the request timeout, or the campaign's time limit when that comes first: a request in flight is
cut there, `stopped`), at most `stream_bytes(max_tokens, prompt)` of answer and `event_bytes(prompt)`
a line; a failure is a result with `error` set, never an exception.

The token count is not taken on trust (issue 21: an engine claiming 10x `max_tokens` made a record
"pay" 10x). The body asks for `return_token_ids` (vLLM and SGLang stream each chunk's new token
ids; an engine that ignores it streams none), so the client counts the tokens it was sent itself:
- with `ignore_eos` (the probe's requests are fixed-length) the reported `completion_tokens` must
  equal `max_tokens`; without it, it may not exceed `max_tokens`;
- either way it must equal the streamed token ids where the engine sent them on every chunk, and
  it may never be fewer than the chunks that carried text (each carries at least one new token);
- more token chunks than `max_tokens` (+ `SPARE_CHUNKS`) ends the request at once.
A request that breaks one of these failed (it counts as failed, never as output). The cell's total
is then held to the engine's own generation counter (gate.probe.runner).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from exporter.engines.base import PerRequestError
from gate.inputs.fetch import FetchError, stream
from gate.inputs.loading import Limits, parse_json
from gate.probe.per_request import streamed_acceptance
from gate.status import InputError

ERROR_CHARS = 200
SPARE_CHUNKS = 8  # token chunks past max_tokens before a stream is cut (a last chunk may carry none)


def event_bytes(prompt: str | Sequence[int]) -> int:
    """The longest event line: 1 MiB, plus the prompt's ids the engines echo on the first chunk with
    `return_token_ids` (at most ~12 bytes an id; a text prompt has no more ids than characters)."""
    return (1 << 20) + 12 * len(prompt)


def stream_bytes(max_tokens: int, prompt: str | Sequence[int]) -> int:
    """The whole stream: the first event, then at most 4 KiB an output token (a vLLM chunk is ~300 bytes)."""
    return event_bytes(prompt) + 4096 * max(max_tokens, 1)


def token_problem(reported: int, max_tokens: int, streamed_ids: int | None, text_chunks: int,
                  ignore_eos: bool) -> str | None:
    """Why a request's reported completion tokens cannot be true, or None (module docstring: the rules)."""
    if ignore_eos and reported != max_tokens:
        return f"usage.completion_tokens is {reported}, but the request asked for exactly {max_tokens} (ignore_eos)"
    if reported > max_tokens:
        return f"usage.completion_tokens is {reported}, more than max_tokens {max_tokens}"
    if streamed_ids is not None and streamed_ids != reported:
        return f"usage.completion_tokens is {reported}, but the stream carried {streamed_ids} token ids"
    if text_chunks > reported:
        return f"usage.completion_tokens is {reported}, but {text_chunks} chunks carried text"
    return None


EVENT_LIMITS = Limits(max_bytes=1 << 30, max_depth=16)  # one event's JSON (its size is the stream's line limit)


@dataclass(frozen=True)
class RequestResult:
    """One request as the client saw it; `error` is None when it completed."""

    sent: float
    end: float
    chunk_times: tuple[float, ...] = ()
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    acceptance_length: float | None = None
    acceptance_refused: str | None = None  # why the per-request parser refused the engine's numbers
    error: str | None = None
    stopped: bool = False  # cut in flight by the campaign's time limit

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def ttft(self) -> float | None:
        return self.chunk_times[0] - self.sent if self.chunk_times else None

    @property
    def tpot(self) -> float | None:
        """(t_last − t_first) / (n − 1): decode time per output token after the first."""
        n = self.completion_tokens
        if not self.chunk_times or n is None or n < 2:
            return None
        return (self.chunk_times[-1] - self.chunk_times[0]) / (n - 1)

    @property
    def chunk_gaps(self) -> list[float]:
        ts = self.chunk_times
        return [b - a for a, b in zip(ts, ts[1:], strict=False)]


@dataclass
class CompletionClient:
    """Posts streaming completions to one engine; holds no connection (each request is its own exchange)."""

    base_url: str
    model: str
    timeout: float = 300.0
    api_key: str | None = None
    temperature: float = 0.0  # 0: greedy, so both arms serve the same tokens; > 0: sampled traffic
    ignore_eos: bool = True  # fixed-length requests (the probe's); False: the engine may stop early

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def body(self, prompt: str | Sequence[int], max_tokens: int) -> dict[str, Any]:
        """Fixed length (ignore_eos); greedy by default (temperature 0: both arms serve the same tokens)."""
        # return_spec_tokens_details: SGLang's per-request acceptance (sglext); vLLM accepts and ignores it.
        # return_token_ids: each chunk's new token ids (vLLM, SGLang), so the client counts the tokens itself.
        return {"model": self.model, "prompt": prompt if isinstance(prompt, str) else list(prompt),
                "max_tokens": max_tokens, "temperature": self.temperature, "ignore_eos": self.ignore_eos,
                "stream": True, "stream_options": {"include_usage": True}, "return_spec_tokens_details": True,
                "return_token_ids": True}

    def complete(self, prompt: str | Sequence[int], max_tokens: int, stop_at: float | None = None) -> RequestResult:
        """One request, ended by the request timeout or by `stop_at` (monotonic; the campaign's time limit),
        whichever comes first; a request cut at `stop_at` is `stopped`."""
        sent = time.monotonic()
        own = sent + self.timeout
        deadline = own if stop_at is None else min(own, stop_at)
        chunks: list[float] = []
        usage: dict[str, Any] | None = None
        usage_chunk: dict[str, Any] | None = None
        details: Any = None
        ids: int | None = 0  # token ids streamed; None once a chunk came without its ids
        text_chunks = 0

        def failed(msg: str, stopped: bool = False) -> RequestResult:
            return RequestResult(sent, time.monotonic(), tuple(chunks), error=msg[:ERROR_CHARS], stopped=stopped)

        try:
            with stream(f"{self.base_url}/v1/completions", deadline=deadline,
                        max_bytes=stream_bytes(max_tokens, prompt), max_line=event_bytes(prompt),
                        headers=self._headers(), body=json.dumps(self.body(prompt, max_tokens)).encode()) as r:
                if r.status != 200:
                    return failed(f"HTTP {r.status}: {_error_message(r.error_text())}")
                done = False
                for raw, now in r.lines():
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    try:
                        event = parse_json(data, "stream chunk", EVENT_LIMITS)
                    except InputError as e:
                        return failed(f"{e}"[:ERROR_CHARS])
                    if not isinstance(event, dict):
                        return failed("stream chunk is not a JSON object")
                    if "error" in event:
                        return failed(f"engine error in stream: {_error_message(json.dumps(event['error']))}")
                    choices = event.get("choices")
                    if choices:
                        chunks.append(now)
                        if len(chunks) > max_tokens + SPARE_CHUNKS:
                            return failed(f"more than {max_tokens} token chunks for max_tokens {max_tokens}")
                        choice = choices[0] if isinstance(choices, list) and isinstance(choices[0], dict) else {}
                        text, got = choice.get("text"), choice.get("token_ids")
                        if isinstance(text, str) and text:
                            text_chunks += 1
                        if ids is not None and isinstance(got, list) and all(
                                isinstance(t, int) and not isinstance(t, bool) for t in got):
                            ids += len(got)
                        else:
                            ids = None
                    if isinstance(event.get("sglext"), dict) and "spec_tokens_details" in event["sglext"]:
                        details = event["sglext"]["spec_tokens_details"]
                    if isinstance(event.get("usage"), dict):
                        usage, usage_chunk = event["usage"], event
                if not done:
                    return failed("stream ended without [DONE]")
        except FetchError as e:
            if e.reason == "timeout":
                if stop_at is not None and stop_at < own:
                    return failed("stopped at the campaign's time limit", stopped=True)
                return failed(f"timed out after {self.timeout:g} s")
            return failed(f"request failed: {e}")
        end = time.monotonic()
        if usage is None:
            return RequestResult(sent, end, tuple(chunks), error="no usage in the stream (include_usage ignored)")
        n = usage.get("completion_tokens")
        p = usage.get("prompt_tokens")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            return RequestResult(sent, end, tuple(chunks), error=f"usage.completion_tokens is {n!r}"[:ERROR_CHARS])
        if not chunks:
            return RequestResult(sent, end, (), error="no token chunks in the stream")
        problem = token_problem(n, max_tokens, ids, text_chunks, self.ignore_eos)
        if problem is not None:
            return RequestResult(sent, end, tuple(chunks), error=problem)
        length, refused = _acceptance(usage_chunk, details, n)
        return RequestResult(sent, end, tuple(chunks), completion_tokens=n,
                             prompt_tokens=p if isinstance(p, int) and not isinstance(p, bool) else None,
                             acceptance_length=length, acceptance_refused=refused)


def _acceptance(usage_chunk: dict[str, Any] | None, details: Any, tokens: int) -> tuple[float | None, str | None]:
    """(L, None) from the validated parser, (None, None) when the engine reported none, (None, why) when the
    parser refused what it reported: an unknown L, never a guessed one."""
    try:
        got = streamed_acceptance(usage_chunk, details, tokens)
    except PerRequestError as e:
        return None, str(e)[:ERROR_CHARS]
    return (got.acceptance_length if got is not None else None), None


def _error_message(text: str) -> str:
    """The engine's own error message (OpenAI error JSON), else the start of the body, on one line."""
    try:
        doc = json.loads(text)
        if isinstance(doc, dict):
            err = doc.get("error", doc)
            msg = err.get("message") if isinstance(err, dict) else err
            if msg:
                return " ".join(str(msg).split())
    except (ValueError, TypeError, RecursionError):  # not JSON, or nested past the parser's depth
        pass
    return " ".join(text.split())[:ERROR_CHARS] or "(empty body)"
