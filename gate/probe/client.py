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
definition. Every request is bounded by a connect/read timeout and a total deadline checked
between chunks; a failure is a result with `error` set, never an exception.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import requests

from gate.probe.per_request import PerRequestError, streamed_acceptance

ERROR_CHARS = 200


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
    """Posts streaming completions to one engine; one instance per worker thread (a Session is not shared)."""

    base_url: str
    model: str
    timeout: float = 300.0
    api_key: str | None = None
    temperature: float = 0.0  # 0: greedy, so both arms serve the same tokens; > 0: sampled traffic
    session: requests.Session = field(default_factory=requests.Session)

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def body(self, prompt: str | Sequence[int], max_tokens: int) -> dict[str, Any]:
        """Fixed length (ignore_eos); greedy by default (temperature 0: both arms serve the same tokens)."""
        # return_spec_tokens_details: SGLang's per-request acceptance (sglext); vLLM accepts and ignores it
        return {"model": self.model, "prompt": prompt if isinstance(prompt, str) else list(prompt),
                "max_tokens": max_tokens, "temperature": self.temperature, "ignore_eos": True, "stream": True,
                "stream_options": {"include_usage": True}, "return_spec_tokens_details": True}

    def complete(self, prompt: str | Sequence[int], max_tokens: int) -> RequestResult:
        sent = time.monotonic()
        deadline = sent + self.timeout
        chunks: list[float] = []
        usage: dict[str, Any] | None = None
        usage_chunk: dict[str, Any] | None = None
        details: Any = None

        def failed(msg: str) -> RequestResult:
            return RequestResult(sent, time.monotonic(), tuple(chunks), error=msg[:ERROR_CHARS])

        try:
            with self.session.post(f"{self.base_url}/v1/completions", json=self.body(prompt, max_tokens),
                                   headers=self._headers(), stream=True,
                                   timeout=(min(10.0, self.timeout), self.timeout)) as r:
                if r.status_code != 200:
                    return failed(f"HTTP {r.status_code}: {_error_message(r.text)}")
                done = False
                # chunk_size=None: yield each HTTP chunk as it arrives (a fixed size would block until
                # that many bytes came and time several engine steps as one).
                for raw in r.iter_lines(chunk_size=None):
                    now = time.monotonic()
                    if now > deadline:
                        return failed(f"no [DONE] within {self.timeout:g} s")
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    try:
                        event = json.loads(data)
                    except json.JSONDecodeError:
                        return failed(f"stream chunk is not JSON: {data[:60]!r}")
                    if not isinstance(event, dict):
                        return failed("stream chunk is not a JSON object")
                    if "error" in event:
                        return failed(f"engine error in stream: {_error_message(json.dumps(event['error']))}")
                    if event.get("choices"):
                        chunks.append(now)
                    if isinstance(event.get("sglext"), dict) and "spec_tokens_details" in event["sglext"]:
                        details = event["sglext"]["spec_tokens_details"]
                    if isinstance(event.get("usage"), dict):
                        usage, usage_chunk = event["usage"], event
                if not done:
                    return failed("stream ended without [DONE]")
        except requests.Timeout:
            return failed(f"timed out after {self.timeout:g} s")
        except requests.RequestException as e:
            return failed(f"request failed: {type(e).__name__}: {e}")
        end = time.monotonic()
        if usage is None:
            return RequestResult(sent, end, tuple(chunks), error="no usage in the stream (include_usage ignored)")
        n = usage.get("completion_tokens")
        p = usage.get("prompt_tokens")
        if not isinstance(n, int) or n < 0:
            return RequestResult(sent, end, tuple(chunks), error=f"usage.completion_tokens is {n!r}")
        if not chunks:
            return RequestResult(sent, end, (), error="no token chunks in the stream")
        length, refused = _acceptance(usage_chunk, details, n)
        return RequestResult(sent, end, tuple(chunks), completion_tokens=n,
                             prompt_tokens=p if isinstance(p, int) else None, acceptance_length=length,
                             acceptance_refused=refused)


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
    except (json.JSONDecodeError, TypeError):
        pass
    return " ".join(text.split())[:ERROR_CHARS] or "(empty body)"
