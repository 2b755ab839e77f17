"""Acceptance evidence from Prometheus history (post phase; Thanos and Mimir speak the same API).

Why range queries over the exporter's counters: a fleet of pods is judged per pod and per
stream, and the answer comes at once from history — nothing waits for a new window inside
an HTTP request. Each step of `increase(specgate_spec_drafts_total[W])` at step W is one
batch window; a window in which `specgate_engine_restarts_total` increased is `reset` and
never evidence. Timeouts, errors and empty answers are recorded as errors (inconclusive).
Tokens and passwords come from the environment or files and are never logged. Metric names
come from `exporter.names` (the output contract), never spelled here.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

from exporter import formulas, names
from gate.evidence.base import (
    AcceptanceWindow,
    BadAnswer,
    EvidenceError,
    EvidenceRequest,
    MetricsEvidence,
    NoData,
    PoolObservation,
    Unreachable,
    no_answer_kind,
)
from gate.plan import PlanError, PrometheusSource
from gate.redact import redact_url

DRAFTS = names.SPEC_DRAFTS.series
ACCEPTED = names.SPEC_ACCEPTED.series
DRAFT_TOKENS = names.SPEC_DRAFT_TOKENS.series
RESTARTS = names.ENGINE_RESTARTS.series
KV_POOL = names.KV_POOL.series
READY = names.ENGINE_READY.series
UP = names.ENGINE_UP.series

Series = list[dict[str, Any]]


@dataclass(frozen=True)
class PromClient:
    url: str
    headers: dict[str, str]
    auth: tuple[str, str] | None
    verify: bool | str
    timeout: float

    def query(self, path: str, params: dict[str, Any]) -> Series:
        """The `data.result` list; Unreachable when no answer came, BadAnswer when it was not a success."""
        shown = redact_url(self.url)
        try:
            r = requests.get(self.url.rstrip("/") + path, params=params, headers=self.headers, auth=self.auth,
                             verify=self.verify, timeout=(min(self.timeout, 3.0), self.timeout))
        except requests.exceptions.Timeout:
            raise Unreachable(f"Prometheus {shown} did not answer within {self.timeout:g}s") from None
        except requests.exceptions.SSLError:
            raise Unreachable(f"Prometheus {shown}: TLS verification failed") from None
        except requests.RequestException as e:
            raise Unreachable(f"cannot reach Prometheus {shown}: {no_answer_kind(e)}") from None
        try:
            doc = r.json()
        except ValueError:
            doc = None
        if r.status_code != 200 or not isinstance(doc, dict) or doc.get("status") != "success":
            detail = doc.get("error") if isinstance(doc, dict) else None
            raise BadAnswer(f"Prometheus {shown} answered HTTP {r.status_code}" + (f": {detail}" if detail else ""))
        result = (doc.get("data") or {}).get("result")
        return result if isinstance(result, list) else []


def _secret_from(env: str | None, file: Path | None, what: str) -> str | None:
    if env:
        value = os.environ.get(env)
        if not value:
            raise PlanError(f"evidence.prometheus: {what} environment variable {env} is not set")
        return value.strip()
    if file:
        try:
            return Path(file).read_text(encoding="utf-8").strip()
        except OSError as e:
            raise PlanError(f"evidence.prometheus: cannot read {what} file {file}: {e.strerror or e}") from None
    return None


def client_for(src: PrometheusSource, url: str) -> PromClient:
    """Headers, auth and TLS settings from the plan (secrets read from env or files here, at the edge)."""
    headers = {"Accept": "application/json"}
    token = _secret_from(src.bearer_token_env, src.bearer_token_file, "bearer token")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    auth = None
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


def _key(metric: dict[str, str]) -> LabelKey:
    return tuple(sorted((k, v) for k, v in metric.items() if k != "__name__"))


def _stream(key: LabelKey) -> str:
    wanted = [f"{k}={v}" for k, v in key if k in ("namespace", "pod", "instance", "model", "rank", "engine")]
    return ",".join(wanted) or ",".join(f"{k}={v}" for k, v in key) or "(no labels)"


LabelKey = tuple[tuple[str, str], ...]


def _series(result: Series) -> dict[LabelKey, dict[float, float]]:
    out: dict[LabelKey, dict[float, float]] = {}
    for s in result:
        vals: dict[float, float] = {}
        for t, v in s.get("values") or []:
            try:
                vals[float(t)] = float(v)
            except (TypeError, ValueError):
                continue
        out[_key(s.get("metric") or {})] = vals
    return out


def _end_time(src: PrometheusSource) -> float:
    if src.end is None:
        return time.time()
    if isinstance(src.end, datetime):
        return src.end.timestamp()
    return float(src.end)


def collect(src: PrometheusSource, url: str, window_seconds: float, lookback_seconds: float,
            min_drafts: float) -> MetricsEvidence:
    """Per-window acceptance per series over the lookback; every failure is an error, never a pass."""
    source = f"Prometheus {redact_url(url)}"
    ev = MetricsEvidence(sources=[source])
    client = client_for(src, url)
    w = max(int(round(window_seconds)), 1)
    end = _end_time(src)
    steps = max(int(lookback_seconds // w), 1)
    start = end - (steps - 1) * w
    sel = _selector(src)
    rng = {"start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{w}s"}
    try:
        drafts = _series(client.query("/api/v1/query_range", {"query": f"increase({DRAFTS}{sel}[{w}s])", **rng}))
        if not drafts:
            raise NoData(f"{source}: no {DRAFTS} series match {sel} in the last {lookback_seconds:g} s")
        accepted = _series(client.query("/api/v1/query_range", {"query": f"increase({ACCEPTED}{sel}[{w}s])", **rng}))
        draft_tokens = _series(client.query("/api/v1/query_range",
                                            {"query": f"increase({DRAFT_TOKENS}{sel}[{w}s])", **rng}))
        restarts = _series(client.query("/api/v1/query_range", {"query": f"increase({RESTARTS}{sel}[{w}s])", **rng}))
        pool_sel = _selector(src, 'pool="target"')
        pool = client.query("/api/v1/query", {"query": f"{KV_POOL}{pool_sel}", "time": f"{end:.3f}"})
        ready = client.query("/api/v1/query", {"query": f"{READY}{sel}", "time": f"{end:.3f}"})
        up = client.query("/api/v1/query", {"query": f"{UP}{sel}", "time": f"{end:.3f}"})
    except EvidenceError as e:
        ev.errors.append(str(e))
        return ev

    for key, dvals in sorted(drafts.items()):
        avals = accepted.get(key, {})
        tvals = draft_tokens.get(key, {})
        rvals = restarts.get(key)
        stream = _stream(key)
        for t in sorted(dvals):
            d = dvals[t]
            a = avals.get(t)
            # No restarts series (or no point at t): unknown, never "no restart".
            rv = rvals.get(t) if rvals is not None else None
            reset: bool | None = None if rv is None else rv > 0
            length = formulas.acceptance_length(a, d) if a is not None and d >= max(min_drafts, 1) else None
            tok = tvals.get(t)
            rate = formulas.acceptance_rate(a, tok) if a is not None and tok else None
            ev.windows.append(AcceptanceWindow(source=source, stream=stream, point=None, start=t - w, end=t,
                                               reset=reset, drafts=d, acceptance_length=length,
                                               acceptance_rate=rate))
    values = []
    for s in pool:
        try:
            values.append(float(s["value"][1]))
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    if values:
        ev.kv_pool = PoolObservation(int(min(values)), f"{source} ({KV_POOL}, smallest of {len(values)} series)")
    readies = []
    for s in ready:
        try:
            readies.append(float(s["value"][1]))
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    if readies:
        ev.ready_seconds, ev.ready_source = max(readies), f"{source} ({READY}, slowest pod)"
    ups = []
    for s in up:
        try:
            ups.append(float(s["value"][1]))
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    ev.live = True
    ev.engine_up = all(u == 1 for u in ups) if ups else None
    return ev


@dataclass(frozen=True)
class PrometheusHistory:
    """An EvidenceSource: the exporter's counters in Prometheus (or Thanos/Mimir) over the plan's lookback."""

    source: PrometheusSource
    url: str

    @property
    def name(self) -> str:
        return f"Prometheus {redact_url(self.url)}"

    def collect(self, request: EvidenceRequest) -> MetricsEvidence:
        return collect(self.source, self.url, request.window_seconds, request.lookback_seconds, request.min_drafts)
