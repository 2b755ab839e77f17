"""A scripted engine on a real loopback HTTP server (127.0.0.1, ephemeral port), for scrape tests.

Replies are registered per path like the `responses` library does (the exporter's fetch is
`http.client` on a socket, which request mocks cannot see): several replies for one path are
used in order and the last one repeats; every request is recorded with its headers. Bodies
are the tests' own (real captures from tests/fixtures).
"""

from __future__ import annotations

import json as jsonlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Call:
    path: str
    headers: dict[str, str]


Reply = tuple[int, dict[str, str], str]


class LoopbackEngine:
    def __init__(self) -> None:
        self.replies: dict[str, list[Reply | Callable[[Call], Reply]]] = {}
        self.calls: list[Call] = []
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                call = Call(self.path, {k: v for k, v in self.headers.items()})
                engine.calls.append(call)
                queue = engine.replies.get(self.path)
                if not queue:
                    status, headers, body = 404, {"Content-Type": "text/plain"}, "not found\n"
                else:
                    reply = queue.pop(0) if len(queue) > 1 else queue[0]
                    status, headers, body = reply(call) if callable(reply) else reply
                data = body.encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def get(self, path: str, body: str = "", json: object = None, status: int = 200) -> None:
        if json is not None:
            reply: Reply = (status, {"Content-Type": "application/json"}, jsonlib.dumps(json))
        else:
            reply = (status, {"Content-Type": "text/plain; version=0.0.4"}, body)
        self.replies.setdefault(path, []).append(reply)

    def add_callback(self, path: str, callback: Callable[[Call], Reply]) -> None:
        self.replies.setdefault(path, []).append(callback)

    def __enter__(self) -> LoopbackEngine:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)
