"""Fetching an engine's `/metrics` (and the side endpoints) with requests, and files.

One attempt per scrape — no retries that pile up; the next scrape is the retry. Connect and
read timeouts, a response-size cap, `Accept: text/plain; version=0.0.4` (engines that speak
OpenMetrics would otherwise escape `vllm:` names). An engine API key is sent as a bearer token
to `/v1/*` only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests
import urllib3

from exporter.engines import DetectError, adapter, detect
from exporter.engines.base import EngineAdapter, EngineSnapshot, ParsedPage, SideInfo
from exporter.parse import ParseError, _looks_like_exposition, parse_page

ACCEPT = "text/plain; version=0.0.4"
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
REASONS = ("timeout", "connect", "http", "parse", "too_large")


class ScrapeError(Exception):
    """A failed scrape with its reason (one of REASONS) and a one-line message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def split_url(url: str) -> tuple[str, str]:
    """Engine URL (base or its /metrics) -> (base URL, metrics URL)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    path = parts.path.rstrip("/")
    if path.endswith("/metrics"):
        base_path, metrics_path = path[: -len("/metrics")], path
    else:
        base_path, metrics_path = path, path + "/metrics"
    base = urlunsplit((parts.scheme, parts.netloc, base_path, "", ""))
    return base, urlunsplit((parts.scheme, parts.netloc, metrics_path, parts.query, ""))


def _body_chunks(r: requests.Response) -> Iterator[bytes]:
    """The body as it arrives: `read1` returns after one socket read, so a total deadline can be
    checked between reads (`iter_content` would wait for a full 64 KiB from a slow-drip engine)."""
    read1 = getattr(r.raw, "read1", None)  # urllib3 >= 2.3
    if read1 is None:
        yield from r.iter_content(65536)
        return
    while chunk := read1(65536, decode_content=True):
        yield chunk


def _get(session: requests.Session, url: str, timeout: float, max_bytes: int,
         headers: dict[str, str] | None = None) -> bytes:
    """One GET, bounded in time (`timeout` for the whole body, not per read) and in size."""
    deadline = time.monotonic() + timeout
    try:
        with session.get(url, timeout=(min(timeout, 3.0), timeout), stream=True, headers=headers or {}) as r:
            if r.status_code != 200:
                raise ScrapeError("http", f"{url} answered HTTP {r.status_code}")
            length = r.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > max_bytes:
                raise ScrapeError("too_large", f"{url} sent {int(length)} bytes (limit {max_bytes})")
            chunks, total = [], 0
            for chunk in _body_chunks(r):
                total += len(chunk)
                if total > max_bytes:
                    raise ScrapeError("too_large", f"{url} sent more than {max_bytes} bytes")
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise ScrapeError("timeout", f"{url} did not finish its page within {timeout:g}s")
            return b"".join(chunks)
    except (requests.exceptions.Timeout, urllib3.exceptions.TimeoutError):
        raise ScrapeError("timeout", f"{url} did not answer within {timeout:g}s") from None
    except requests.exceptions.ConnectionError as e:
        msg = "connection refused" if "refused" in str(e).lower() else type(e).__name__
        raise ScrapeError("connect", f"cannot reach {url}: {msg}") from None
    except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError) as e:
        raise ScrapeError("http", f"{url}: {type(e).__name__}") from None


def _parse_text(text: str, engine: str) -> tuple[EngineAdapter, ParsedPage]:
    """Detect (when `auto`) and parse once; a page that is not Prometheus text raises ScrapeError."""
    try:
        _looks_like_exposition(text)  # HTML/JSON is named as such, before "no engine families"
        ad = adapter(detect(text, engine))
        return ad, parse_page(text, ad.families)
    except (ParseError, DetectError) as e:
        raise ScrapeError("parse", str(e)) from None


def snapshot_from_text(text: str, engine: str = "auto", timestamp: float | None = None,
                       side: SideInfo | None = None) -> EngineSnapshot:
    """Parse a page into a normalised snapshot; a page that is not Prometheus text raises ScrapeError."""
    ad, page = _parse_text(text, engine)
    return ad.snapshot(page, time.time() if timestamp is None else timestamp, side)


def read_file_snapshot(path: str | Path, engine: str = "auto") -> EngineSnapshot:
    """A recorded `/metrics` page from disk; its timestamp is the file's modification time."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ScrapeError("parse", f"cannot read {p}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ScrapeError("parse", f"{p}: not UTF-8 text, not a Prometheus exposition") from None
    try:
        return snapshot_from_text(text, engine, timestamp=p.stat().st_mtime)
    except ScrapeError as e:
        raise ScrapeError(e.reason, f"{p}: {e}") from None


@dataclass
class Scraper:
    """Scrapes one engine; caches side information (context cap, SGLang pool) until a restart.

    Not thread-safe: one scrape loop owns it.
    """

    url: str
    engine: str = "auto"
    timeout: float = 5.0
    max_bytes: int = DEFAULT_MAX_BYTES
    api_key: str | None = field(default=None, repr=False)
    session: requests.Session = field(default_factory=requests.Session, repr=False)
    side_retry_seconds: float = 60.0  # side info that came back empty (endpoint failed) is asked again
    _side: SideInfo | None = field(default=None, init=False, repr=False)
    _side_start: float | None = field(default=None, init=False, repr=False)
    _side_at: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.base_url, self.metrics_url = split_url(self.url)
        if self.api_key is None:
            self.api_key = os.environ.get("SPECGATE_ENGINE_API_KEY") or None

    def _json(self, path: str, v1: bool = False) -> dict | None:
        headers = {"Authorization": f"Bearer {self.api_key}"} if v1 and self.api_key else None
        try:
            import json

            body = _get(self.session, self.base_url + path, self.timeout, 4 * 1024 * 1024, headers)
            doc = json.loads(body)
            return doc if isinstance(doc, dict) else None
        except (ScrapeError, ValueError):
            return None

    def _side_info(self, kind: str) -> SideInfo:
        if kind == "vllm":
            models = self._json("/v1/models", v1=True) or {}
            lens = {}
            for m in models.get("data", []) if isinstance(models.get("data"), list) else []:
                if isinstance(m, dict) and isinstance(m.get("max_model_len"), int):
                    lens[str(m.get("id"))] = m["max_model_len"]
            ver = (self._json("/version") or {}).get("version")
            return SideInfo(max_model_len=lens, version=ver if isinstance(ver, str) else None)
        info = self._json("/server_info") or self._json("/get_server_info") or {}

        def num(*keys: str) -> int | None:
            for k in keys:
                v = info.get(k)
                if v is None and isinstance(info.get("internal_states"), list) and info["internal_states"]:
                    st = info["internal_states"][0]
                    v = st.get(k) if isinstance(st, dict) else None
                if isinstance(v, int | float) and not isinstance(v, bool):
                    return int(v)
            return None

        ver = info.get("version")
        return SideInfo(max_total_num_tokens=num("max_total_num_tokens"), context_length=num("context_length"),
                        configured_max_total_tokens=num("max_total_tokens"),
                        version=ver if isinstance(ver, str) else None)

    def scrape(self) -> EngineSnapshot:
        """Fetch and normalise one page; raises ScrapeError with its reason."""
        raw = _get(self.session, self.metrics_url, self.timeout, self.max_bytes, {"Accept": ACCEPT})
        ts = time.time()
        ad, page = _parse_text(raw.decode("utf-8", errors="replace"), self.engine)
        first = ad.snapshot(page, ts)
        missing = self._side is not None and (
            not self._side.max_model_len if first.engine == "vllm" else self._side == SideInfo())
        if (self._side is None or first.process_start_time != self._side_start
                or (missing and time.monotonic() - self._side_at >= self.side_retry_seconds)):
            self._side = self._side_info(first.engine)
            self._side_start = first.process_start_time
            self._side_at = time.monotonic()
        if self._side == SideInfo():
            return first
        return ad.snapshot(page, ts, self._side)  # the page is parsed once, normalised again with side info


def scrape_once(url: str, engine: str = "auto", timeout: float = 5.0, api_key: str | None = None) -> EngineSnapshot:
    """One scrape of a live engine (the `specgate exporter once` path and the gate's live evidence)."""
    return Scraper(url, engine=engine, timeout=timeout, api_key=api_key).scrape()
