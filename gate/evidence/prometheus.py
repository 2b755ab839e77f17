"""Acceptance evidence from Prometheus history (post phase; Thanos, Mimir and VictoriaMetrics speak the same API).

Why range queries over the exporter's counters, judged as a fleet: every pod the plan's selector
matches gets a row of its own windows (gate.evidence.fleet: a fixed set of queries, never one per pod, and
the per-pod table of facts; the acceptance line judges each row and the fleet by the rule
`evidence.prometheus.fleet`, gate.checks.acceptance.fleet_rule), and the answer comes at once from
history — nothing waits for a new window inside an HTTP request. Each step of
`increase(specgate_spec_drafts_total[W])` at step W is one batch window; a window in which
`specgate_engine_restarts_total` increased is `reset` and never evidence. Timeouts, errors and
empty answers are recorded as errors (inconclusive). Side facts for other lines: the smallest
allocated pool and the slowest cold start among the matched pods (each named); with both cohorts
named, the canary's and the stable's samples over the same window (gate.evidence.fleet.cohorts). Tokens and
passwords come from the environment or files and are never logged; `tenant` is sent as
`X-Scope-OrgID`. Metric names come from `exporter.names` (the output contract), never spelled here.

Every answer is bounded before it is believed (issue 21): one total deadline per query
(`timeout_seconds`, headers and body together: a server dripping its headers ends there),
at most `MAX_ANSWER_BYTES` per answer and `MAX_TOTAL_BYTES` over one evaluation's queries, at
most `MAX_SERIES` series and `MAX_POINTS` points per answer and `MAX_TOTAL_POINTS` over the
evaluation (the points counted on the bytes before any JSON object is built, so a small-points
flood costs its bytes, not ~160 B of objects a point), one answer parsed at a time. Sized so a 10,000-pod fleet at the plan defaults (60 windows) is judged: its two range
answers are ~22 MB and ~600,000 points each. Redirects are not followed; proxies from the
environment are not used. Why not `gate.inputs.fetch` (the gate's other bounded fetch): it has no
CA bundle (the plan's `ca_file`, private CAs of Thanos/Mimir) and counts bytes per answer, not
against one budget shared by the evaluation's parallel queries while they read.
"""
from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from exporter import names
from gate.evidence.base import (
    BadAnswer,
    EvidenceError,
    EvidenceRequest,
    MetricsEvidence,
    NoData,
    PoolObservation,
    Unreachable,
    no_answer_kind,
)
from gate.evidence.fleet import answers
from gate.evidence.fleet import cohorts as cohort_evidence
from gate.evidence.fleet.collect import FleetAsk
from gate.evidence.fleet.collect import evaluate as evaluate_fleet
from gate.inputs.loading import read_secret
from gate.inputs.redact import redact_url
from gate.model.invariants import partial_answer
from gate.plan.model import SLO, PlanError, PrometheusSource
from gate.status import InputError

log = logging.getLogger(__name__)

DRAFTS = names.SPEC_DRAFTS.series
ACCEPTED = names.SPEC_ACCEPTED.series
DRAFT_TOKENS = names.SPEC_DRAFT_TOKENS.series
KV_POOL = names.KV_POOL.series
READY = names.ENGINE_READY.series
ENGINE_INFO = names.ENGINE_INFO.series

Series = list[dict[str, Any]]

# Answer bounds (design.md "Prometheus evidence"). A 10,000-pod fleet at the plan defaults (1 h in 60 s windows,
# one row per pod) answers its range queries with ~22 MB and ~600,000 points each; the bounds leave ~3x room
# (two rows per pod, or ~150 windows) and stop there.
MAX_ANSWER_BYTES = 64 * 1024 * 1024  # one answer
MAX_TOTAL_BYTES = 160 * 1024 * 1024  # all answers of one evaluation together
MAX_SERIES = 20_000  # series in one answer (= rows: gate.evidence.fleet.collect.MAX_ROWS)
MAX_POINTS = 1_500_000  # points in one answer (~110-160 B each once parsed)
# points of all answers of one evaluation: a 10,000-pod fleet with both cohorts (5,000 pods each) brings ~2.4 M
# at the defaults (two fleet and six cohort range answers); the parsed answers alive at once stay below ~500 MB
MAX_TOTAL_POINTS = 3_000_000
ERROR_BODY_BYTES = 64 * 1024  # of a non-200 answer, read for its error message
READ_CHUNK = 256 * 1024


@dataclass
class AnswerBudget:
    """Bytes all answers of one evaluation may still bring, and the one-parse-at-a-time lock (shared by the
    query threads of one client)."""

    left: int = field(default_factory=lambda: MAX_TOTAL_BYTES)
    points_left: int = field(default_factory=lambda: MAX_TOTAL_POINTS)
    lock: threading.Lock = field(default_factory=threading.Lock)
    parsing: threading.Lock = field(default_factory=threading.Lock)

    def take(self, n: int) -> bool:
        with self.lock:
            self.left -= n
            return self.left >= 0

    def take_points(self, n: int) -> bool:
        with self.lock:
            self.points_left -= n
            return self.points_left >= 0


@dataclass(frozen=True)
class QueryCost:
    """Where one query's time went (bench/fleet.py prints these): `backend_seconds` from sending it to the answer's
    headers (the backend evaluating the query: Prometheus and VictoriaMetrics write headers once the result is
    computed), `transfer_seconds` reading the body, `decode_seconds` JSON to Python objects; its bytes and points."""

    path: str
    query: str
    backend_seconds: float
    transfer_seconds: float
    decode_seconds: float
    bytes: int
    points: int
    typed: bool = False  # decoded by gate.evidence.fleet.answers (else json.loads)


@dataclass
class CostLedger:
    """The costs of one client's queries, appended by the query threads (never read by a verdict, only shown)."""

    entries: list[QueryCost] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, cost: QueryCost) -> None:
        log.debug("query %.80s: backend %.3fs, transfer %.3fs, decode %.3fs (%s), %d bytes, %d points", cost.query,
                  cost.backend_seconds, cost.transfer_seconds, cost.decode_seconds,
                  "typed" if cost.typed else "json", cost.bytes, cost.points)
        with self.lock:
            self.entries.append(cost)


class _Watchdog:
    """Shuts the connection's socket at the deadline, so a read blocked on a dripping server returns."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float) -> None:
        self.conn = conn
        self.fired = False
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cancel(self) -> None:
        self._timer.cancel()


def count_points(body: bytes | bytearray) -> int:
    """An upper bound on the points (and series) of an answer, from its bytes: every point and every series'
    list opens a `[` (label values may hold one too: counted, never missed)."""
    return body.count(b"[")


@dataclass(frozen=True)
class PromClient:
    url: str
    headers: dict[str, str]
    auth: tuple[str, str] | None
    verify: bool | str
    timeout: float
    budget: AnswerBudget = field(default_factory=AnswerBudget, compare=False)
    ledger: CostLedger = field(default_factory=CostLedger, compare=False)

    def _connection(self) -> tuple[http.client.HTTPConnection, str]:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadAnswer(f"Prometheus {redact_url(self.url)}: not an http(s) URL")
        prefix = parts.path.rstrip("/")
        conn: http.client.HTTPConnection
        if parts.scheme == "https":
            ctx = ssl.create_default_context(cafile=self.verify) if isinstance(self.verify, str) else \
                ssl.create_default_context()
            if self.verify is False:
                ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=self.timeout, context=ctx)
        else:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=self.timeout)
        return conn, prefix

    def _headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.auth is not None:
            headers["Authorization"] = "Basic " + base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
        return headers

    def fetch(self, path: str, params: dict[str, Any],
              clock: list[float] | None = None) -> tuple[int, bytearray]:
        """(status, body) within one deadline for the whole exchange and the answer limits; Unreachable or
        BadAnswer otherwise. `clock`, when given, gets the perf_counter times of the headers and of the body's end."""
        shown = redact_url(self.url)
        conn, prefix = self._connection()
        dog = _Watchdog(conn, self.timeout)
        try:
            conn.request("GET", f"{prefix}{path}?{urlencode(params)}", headers=self._headers())
            if dog.fired:  # it fired while connecting, before there was a socket to shut
                raise TimeoutError
            r = conn.getresponse()
            if clock is not None:
                clock.append(time.perf_counter())
            if (r.getheader("Content-Encoding") or "identity").strip().lower() != "identity":
                raise BadAnswer(f"Prometheus {shown} sent an encoded body although none was asked for")
            limit = MAX_ANSWER_BYTES if r.status == 200 else ERROR_BODY_BYTES
            body = bytearray()  # one buffer, never a list of chunks and their join
            while len(body) <= limit:
                chunk = r.read(READ_CHUNK)
                if not chunk:
                    break
                body += chunk
                if not self.budget.take(len(chunk)):
                    raise BadAnswer(f"Prometheus {shown}: the answers of one evaluation passed "
                                    f"{MAX_TOTAL_BYTES // 2**20} MiB together")
            if dog.fired:
                raise TimeoutError
            if clock is not None:
                clock.append(time.perf_counter())
            if len(body) > limit:
                if r.status == 200:
                    raise BadAnswer(f"Prometheus {shown} sent an answer over {MAX_ANSWER_BYTES // 2**20} MiB")
                del body[limit:]
            return r.status, body
        except EvidenceError:
            raise
        except ssl.SSLCertVerificationError:
            raise Unreachable(f"Prometheus {shown}: TLS verification failed") from None
        except (TimeoutError, OSError, http.client.HTTPException) as e:
            if dog.fired or isinstance(e, TimeoutError):
                raise Unreachable(f"Prometheus {shown} did not answer within {self.timeout:g}s") from None
            raise Unreachable(f"cannot reach Prometheus {shown}: {no_answer_kind(e)}") from None
        finally:
            dog.cancel()
            conn.close()

    def query(self, path: str, params: dict[str, Any]) -> Series:
        """The `data.result` list; Unreachable when no answer came, BadAnswer when it was not a success or
        is larger than the bounds allow."""
        return self._query(path, params, None, None)

    def query_typed(self, path: str, params: dict[str, Any], kind: str,
                    read: Callable[[list[Any]], Any] | None = None) -> Any:
        """`query`, the answer decoded straight into typed series (`gate.evidence.fleet.answers`, kind "range" or
        "instant") when it has the API's success shape, else read as `query` reads it (dicts), same errors; then
        `read(result)` inside the one-answer-at-a-time section (so the decoded objects of one answer are turned
        into rows and dropped before the next answer is decoded), and its return value returned."""
        return self._query(path, params, kind, read)

    def _query(self, path: str, params: dict[str, Any], kind: str | None,
               read: Callable[[list[Any]], Any] | None) -> Any:
        shown = redact_url(self.url)
        clock = [time.perf_counter()]
        status, body = self.fetch(path, params, clock)
        size = len(body)
        points = 0
        if status == 200:
            points = count_points(body)
            if points > MAX_POINTS + MAX_SERIES + 2:
                raise BadAnswer(f"Prometheus {shown} answered with more than {MAX_POINTS:,} points")
            if not self.budget.take_points(points):
                raise BadAnswer(f"Prometheus {shown}: the answers of one evaluation passed {MAX_TOTAL_POINTS:,} "
                                "points together")
        with self.budget.parsing:  # one parsed answer in memory at a time (and, with `read`, its rows made)
            t0 = time.perf_counter()
            typed = answers.decode(body, kind) if kind is not None and status == 200 else None
            doc = None
            if typed is None:
                try:
                    doc = json.loads(body)
                except (ValueError, RecursionError):
                    doc = None
            decoded = time.perf_counter() - t0
            del body
            if len(clock) == 3:
                self.ledger.add(QueryCost(path, str(params.get("query", "")), clock[1] - clock[0],
                                          clock[2] - clock[1], decoded, size, points, typed is not None))
            result = typed if typed is not None else self._result(status, doc)
            if len(result) > MAX_SERIES:
                raise BadAnswer(f"Prometheus {shown} answered with {len(result):,} series, more than {MAX_SERIES:,}")
            return read(result) if read is not None else result

    def _result(self, status: int, doc: Any) -> list[Any]:
        """The generic answer's `data.result`; BadAnswer when it is not a success or is partial (completeness)."""
        shown = redact_url(self.url)
        if status != 200 or not isinstance(doc, dict) or doc.get("status") != "success":
            detail = doc.get("error") if isinstance(doc, dict) else None
            detail = str(detail)[:300] if detail is not None else None
            raise BadAnswer(f"Prometheus {shown} answered HTTP {status}" + (f": {detail}" if detail else ""))
        partial = partial_answer(doc, f"Prometheus {shown}")
        if partial is not None:  # the failing pod's series may be the ones missing: no evidence for a pass
            raise BadAnswer(partial)
        data = doc.get("data")
        result = data.get("result") if isinstance(data, dict) else None
        return result if isinstance(result, list) else []


def _secret_from(env: str | None, file: Path | None, what: str) -> str | None:
    if env:
        value = os.environ.get(env)
        if not value:
            raise PlanError(f"evidence.prometheus: {what} environment variable {env} is not set")
        return value.strip()
    if file:
        # gate.inputs: a regular file under SECRET_LIMITS (a FIFO or /dev/zero is refused at once); the
        # message names the file, never its content
        try:
            return read_secret(file, f"{what} file").strip()
        except InputError as e:
            raise PlanError(f"evidence.prometheus: {e}") from None
    return None


def client_for(src: PrometheusSource, url: str) -> PromClient:
    """Headers, auth and TLS settings from the plan (secrets read from env or files here, at the edge)."""
    headers = {"Accept": "application/json"}
    token = _secret_from(src.bearer_token_env, src.bearer_token_file, "bearer token")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    auth = None
    if src.tenant:
        headers["X-Scope-OrgID"] = src.tenant  # Mimir/Cortex tenant (a|b|c: federated query)
    if src.basic_auth is not None:
        pw = _secret_from(src.basic_auth.password_env, src.basic_auth.password_file, "password") or ""
        auth = (src.basic_auth.username, pw)
    verify: bool | str = str(src.ca_file) if src.ca_file else True
    return PromClient(url=url, headers=headers, auth=auth, verify=verify, timeout=src.timeout_seconds)


def _selector(src: PrometheusSource, extra: str = "") -> str:
    sel = (src.selector or "").strip()
    if sel.startswith("{") and sel.endswith("}"):
        sel = sel[1:-1].strip()
    parts = [p for p in (sel, extra) if p]
    return "{" + ",".join(parts) + "}"


def _end_time(src: PrometheusSource) -> float:
    if src.end is None:
        return time.time()
    if isinstance(src.end, datetime):
        return src.end.timestamp()
    return float(src.end)


def _instant_values(result: Series) -> list[tuple[dict[str, str], float]]:
    out = []
    for s in result:
        try:
            out.append((s.get("metric") or {}, float(s["value"][1])))
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    return out


def collect(src: PrometheusSource, url: str, window_seconds: float, lookback_seconds: float,
            min_drafts: float, slo: SLO | None = None, k: int | None = None, method: str | None = None,
            now: float | None = None, served_model_name: str | None = None,
            require_recent: bool = False, path: str = "auto") -> MetricsEvidence:
    """The fleet's per-pod table of facts (gate.evidence.fleet) plus the side facts; every failure is an error, never
    a pass. `path`: the fleet's answers from the recorded per-pod window facts where they are this plan's ("auto",
    else the raw range queries, the reason kept on the table), only those ("recorded") or only ranges ("raw")."""
    source = f"Prometheus {redact_url(url)}"
    ev = MetricsEvidence(sources=[source])
    client = client_for(src, url)
    end = _end_time(src)
    ask = FleetAsk(slo=slo or SLO(window_seconds=window_seconds, lookback_seconds=lookback_seconds),
                   window_seconds=window_seconds, lookback_seconds=lookback_seconds, min_drafts=min_drafts,
                   end=end, k=k, method=method, now=time.time() if now is None else now,
                   served_model_name=served_model_name, require_recent=require_recent, path=path)
    sel = _selector(src)
    try:
        result = evaluate_fleet(client, src, ask, source)
        if not result.rows:
            raise NoData(f"{source}: no {DRAFTS} series match {result.selector} in the last {lookback_seconds:g} s")
        pool_sel = _selector(src, 'pool="target"')
        pool = _instant_values(client.query("/api/v1/query", {"query": f"{KV_POOL}{pool_sel}", "time": f"{end:.3f}"}))
        ready = _instant_values(client.query("/api/v1/query", {"query": f"{READY}{sel}", "time": f"{end:.3f}"}))
    except EvidenceError as e:
        ev.errors.append(str(e))
        return ev
    ev.fleet = result
    ev.live = True
    if result.cost is not None:
        log.debug("%s: %d rows, answered and read in %.3fs (reading %.3fs over the query threads), rows built in "
                  "%.3fs", source, len(result.rows), result.cost.answers_seconds, result.cost.read_seconds,
                  result.cost.rows_seconds)
    # Canary against stable over the same window (gate.evidence.fleet.cohorts): its own errors, never the fleet's.
    ev.cohorts = cohort_evidence.collect(client, src, window_seconds, lookback_seconds, end, source,
                                         served_model_name=served_model_name, now=ask.now if require_recent else None)
    ev.engine_versions = _pod_versions(client, src, end, source)
    ups = [r.engine_up for r in result.rows]
    ev.engine_up = all(u is True for u in ups) if ups else None
    if pool:
        labels, tokens = min(pool, key=lambda x: x[1])
        who = labels.get("pod") or labels.get("instance") or "?"
        ev.kv_pool = PoolObservation(int(tokens), f"{source} ({KV_POOL}, smallest of {len(pool)} series: {who})")
    if ready:
        labels, seconds = max(ready, key=lambda x: x[1])
        who = labels.get("pod") or labels.get("instance") or "?"
        ev.ready_seconds, ev.ready_source = seconds, f"{source} ({READY}, slowest pod: {who})"
    return ev


def _pod_versions(client: PromClient, src: PrometheusSource, end: float, source: str) -> dict[str, str]:
    """Each pod's engine version at the end (specgate_engine_info{version}); a failed or empty answer gives none:
    versions unknown are left to the version rules, never taken for one version."""
    try:
        info = _instant_values(client.query("/api/v1/query", {"query": f"{ENGINE_INFO}{_selector(src)}",
                                                              "time": f"{end:.3f}"}))
    except EvidenceError as e:
        log.debug("%s: no engine versions: %s", source, e)
        return {}
    return {labels.get("pod") or labels.get("instance") or "?": labels["version"] for labels, _ in info
            if labels.get("version")}


@dataclass(frozen=True)
class PrometheusHistory:
    """An EvidenceSource: the exporter's counters in Prometheus (or Thanos/Mimir) over the plan's lookback."""

    source: PrometheusSource
    url: str
    slo: SLO | None = None
    k: int | None = None
    method: str | None = None
    served_model_name: str | None = None
    require_recent: bool = False  # post: windows must have ended within lookback_seconds of now

    @property
    def name(self) -> str:
        return f"Prometheus {redact_url(self.url)}"

    def collect(self, request: EvidenceRequest) -> MetricsEvidence:
        return collect(self.source, self.url, request.window_seconds, request.lookback_seconds, request.min_drafts,
                       slo=self.slo, k=self.k, method=self.method, served_model_name=self.served_model_name,
                       require_recent=self.require_recent)
