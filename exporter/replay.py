"""A replay engine: recorded real `/metrics` captures served on loopback as a live engine.

Captures in a directory are played in name order, one every `step_seconds`, except that the
phase words `before`, `during`, `after` sort in time order (the recorded captures are named
`metrics-<arm>-{before,during,after}.txt`, whose plain name order would play `after` first). Counters and
histogram series advance linearly from one capture's values to the next; when a series would
go down between two captures (they come from different runs), the replay keeps counting up by
the later capture's value instead (as `increase()` would), so the replay is one engine that
never restarts. Gauges and info series come from the capture being approached.
`process_start_time_seconds` is the replay's own start. Served in the classic text format
(`text/plain; version=0.0.4`) — a fake engine that spoke OpenMetrics would break `vllm:` names.
Optional `models.json` in the directory is served on `/v1/models`.
"""

from __future__ import annotations

import json
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from exporter.exits import EXIT_INVALID
from exporter.parse import ParseError, _looks_like_exposition

TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"
CUMULATIVE_SUFFIXES = ("_bucket", "_count", "_sum")
_PHASE_RE = re.compile(r"(?<![a-z])(before|during|after)(?![a-z])")
_PHASE_RANK = {"before": "0", "during": "1", "after": "2"}


def play_order(name: str) -> str:
    """Sort key: the file name with `before`/`during`/`after` replaced by their rank in time."""
    return _PHASE_RE.sub(lambda m: _PHASE_RANK[m.group(1)], name)


def _series_kinds(text: str) -> tuple[set[str], set[str]]:
    counters, histos = set(), set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4:
                if parts[3] == "counter":
                    counters.add(parts[2])
                    counters.add(parts[2] + "_total")
                elif parts[3] in ("histogram", "summary"):
                    histos.add(parts[2])
    return counters, histos


def _is_cumulative(name: str, counters: set[str], histos: set[str]) -> bool:
    if name in counters:
        return True
    return any(name.endswith(sfx) and name[: -len(sfx)] in histos for sfx in CUMULATIVE_SUFFIXES)


def _split_sample(line: str) -> tuple[str, str, str] | None:
    """-> (series id, metric name, value text) for a sample line; None for comments/blank."""
    if not line or line.startswith("#"):
        return None
    close = line.rfind("}")
    head, _, rest = (line[: close + 1], "", line[close + 1:]) if close != -1 else line.partition(" ")
    parts = rest.split()
    if not parts:
        return None
    name = head.split("{", 1)[0]
    return head, name, parts[0]


class Replay:
    """Precomputed cumulative values per capture; `page(t)` renders the page at time t."""

    def __init__(self, texts: list[str], step_seconds: float, loop: bool, start: float) -> None:
        if not texts:
            raise ValueError("no captures to replay")
        self.step = step_seconds
        self.loop = loop
        self.start = start
        self.texts = texts
        self.kinds = [_series_kinds(t) for t in texts]
        self.values: list[dict[str, float]] = []
        for t in texts:
            vals = {}
            for line in t.splitlines():
                sp = _split_sample(line)
                if sp:
                    try:
                        vals[sp[0]] = float(sp[2])
                    except ValueError:
                        pass
            self.values.append(vals)
        # cumulative replay values per capture index
        self.cum: list[dict[str, float]] = [dict(self.values[0])]
        self.inc: list[dict[str, float]] = []
        for i in range(1, len(texts)):
            prev, cur = self.values[i - 1], self.values[i]
            inc = {k: (v - prev[k] if k in prev and v >= prev[k] else v) for k, v in cur.items()}
            self.inc.append(inc)
            self.cum.append({k: self.cum[i - 1].get(k, 0.0) + inc[k] for k in cur})

    def _value(self, series: str, seg: int, frac: float, extra_cycles: float) -> float | None:
        n = len(self.texts)
        if n == 1:
            return self.cum[0].get(series)
        last = self.inc[-1]
        if seg >= n - 1:
            base = self.cum[-1].get(series)
            if base is None:
                return None
            return base + (last.get(series, 0.0) * extra_cycles if self.loop else 0.0)
        lo = self.cum[seg].get(series, 0.0)
        return lo + frac * self.inc[seg].get(series, 0.0)

    def page(self, now: float) -> str:
        elapsed = max(now - self.start, 0.0)
        n = len(self.texts)
        seg = int(elapsed // self.step)
        frac = (elapsed % self.step) / self.step
        extra = max(elapsed / self.step - (n - 1), 0.0)
        idx = min(seg + 1, n - 1) if n > 1 else 0
        text = self.texts[idx]
        counters, histos = self.kinds[idx]
        out = []
        for line in text.splitlines():
            sp = _split_sample(line)
            if sp is None:
                out.append(line)
                continue
            series, name, _ = sp
            if name == "process_start_time_seconds":
                out.append(f"{series} {self.start!r}")
            elif _is_cumulative(name, counters, histos) and not name.endswith("_created"):
                v = self._value(series, min(seg, n - 1), frac, extra)
                out.append(f"{series} {v!r}" if v is not None else line)
            else:
                out.append(line)
        return "\n".join(out) + "\n"


def load_captures(directory: Path | None) -> tuple[list[str], dict[str, Any] | None]:
    """Capture texts (*.txt in `play_order`) and the optional models.json."""
    if directory is None:
        root = resources.files("exporter") / "replay_data"
        names = sorted((p.name for p in root.iterdir() if p.name.endswith(".txt")), key=play_order)
        texts = [(root / n).read_text(encoding="utf-8") for n in names]
        models_file = root / "models.json"
        models = json.loads(models_file.read_text()) if models_file.is_file() else None
        return texts, models
    d = Path(directory)
    if not d.is_dir():
        raise ValueError(f"{d} is not a directory")
    files = sorted((p for p in d.iterdir() if p.suffix == ".txt"), key=lambda p: play_order(p.name))
    if not files:
        raise ValueError(f"{d} holds no *.txt captures")
    texts = []
    for f in files:
        t = f.read_text(encoding="utf-8")
        try:
            _looks_like_exposition(t)
        except ParseError as e:
            raise ValueError(f"{f}: {e}") from None
        texts.append(t)
    mj = d / "models.json"
    return texts, (json.loads(mj.read_text()) if mj.is_file() else None)


def make_server(replay: Replay, models: dict[str, Any] | None, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, replay.page(time.time()).encode(), TEXT_FORMAT)
            elif path == "/health":
                self._send(200, b"", "text/plain")
            elif path == "/v1/models" and models is not None:
                self._send(200, json.dumps(models).encode(), "application/json")
            else:
                self._send(404, b"not found\n", "text/plain")

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    httpd = ThreadingHTTPServer((host, port), Handler)
    httpd.daemon_threads = True
    return httpd


def serve_replay(directory: Path | None, host: str = "127.0.0.1", port: int = 0, step_seconds: float = 5.0,
                 loop: bool = False) -> int:
    try:
        texts, models = load_captures(directory)
        httpd = make_server(Replay(texts, step_seconds, loop, time.time()), models, host, port)
    except (OSError, ValueError) as e:
        print(f"specgate: error: {e}", file=sys.stderr)
        return EXIT_INVALID
    h, p = httpd.server_address[:2]
    host = h.decode() if isinstance(h, (bytes, bytearray)) else str(h)
    print(f"specgate replay: {len(texts)} captures on http://{host}:{p}/metrics "
          f"(one every {step_seconds:g}s{', looping' if loop else ''})", file=sys.stderr, flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    stop.wait()
    httpd.shutdown()
    httpd.server_close()
    return 0
