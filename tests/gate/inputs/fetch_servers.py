"""Small loopback HTTP servers that misbehave on purpose (drip, lie, oversize), for the bounded-fetch tests.

Each server listens on 127.0.0.1 at a free port and hands every request (read whole: head and a
`Content-Length` body) to a handler that writes raw bytes to the connection, so a test can send what no
well-behaved framework would: a status line and then one header byte every 20 ms, a body shorter or
longer than announced, an event line without end. A write to a connection the client has closed ends
that handler quietly.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


Handler = Callable[[Request, socket.socket], None]


def answer(status: int, body: bytes = b"", ctype: str = "application/json", extra: str = "") -> bytes:
    """A whole HTTP/1.1 answer with Content-Length."""
    return (f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n{extra}"
            f"Connection: close\r\n\r\n").encode() + body


def json_answer(doc: Any, status: int = 200) -> bytes:
    return answer(status, json.dumps(doc).encode())


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def drip(conn: socket.socket, data: bytes, every: float = 0.02) -> None:
    """`data` one byte at a time, `every` seconds apart (until the client hangs up)."""
    for i in range(len(data)):
        conn.sendall(data[i:i + 1])
        time.sleep(every)


def _read_request(conn: socket.socket) -> Request | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        got = conn.recv(65536)
        if not got:
            return None
        buf += got
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    want = int(headers.get("content-length", "0"))
    while len(body) < want:
        got = conn.recv(65536)
        if not got:
            break
        body += got
    return Request(method, path, headers, body)


@dataclass
class RawServer:
    """Context manager: a loopback server calling `handler(request, connection)` for every request."""

    handler: Handler
    requests: list[Request] = field(default_factory=list)
    _sock: socket.socket = field(init=False)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.05)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                req = _read_request(conn)
                if req is None:
                    return
                self.requests.append(req)
                self.handler(req, conn)
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(30)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def __enter__(self) -> RawServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._sock.close()
