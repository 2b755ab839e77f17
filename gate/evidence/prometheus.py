"""Acceptance evidence from Prometheus history (post phase; Thanos, Mimir and VictoriaMetrics speak the same API).

Why range queries over the exporter's counters, judged as a fleet: every pod the plan's selector
matches is judged on its own windows (gate.evidence.fleet: a fixed set of queries, never one per pod; the
per-pod table and the fleet rule `evidence.prometheus.fleet`), and the answer comes at once from
history — nothing waits for a new window inside an HTTP request. Each step of
`increase(specgate_spec_drafts_total[W])` at step W is one batch window; a window in which
`specgate_engine_restarts_total` increased is `reset` and never evidence. Timeouts, errors and
empty answers are recorded as errors (inconclusive). Side facts for other lines: the smallest
allocated pool and the slowest cold start among the matched pods (each named); with both cohorts
named, the canary's and the stable's samples over the same window (gate.evidence.fleet.cohorts). Tokens and
passwords come from the environment or files and are never logged; `tenant` is sent as
`X-Scope-OrgID`. Metric names come from `exporter.names` (the output contract), never spelled here.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

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
from gate.evidence.fleet import cohorts as cohort_evidence
from gate.evidence.fleet.collect import FleetAsk
from gate.evidence.fleet.collect import evaluate as evaluate_fleet
from gate.inputs.loading import read_secret
from gate.inputs.redact import redact_url
from gate.plan.model import SLO, PlanError, PrometheusSource
from gate.status import InputError

DRAFTS = names.SPEC_DRAFTS.series
ACCEPTED = names.SPEC_ACCEPTED.series
DRAFT_TOKENS = names.SPEC_DRAFT_TOKENS.series
KV_POOL = names.KV_POOL.series
READY = names.ENGINE_READY.series

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
            require_engine_up: bool = True, now: float | None = None,
            served_model_name: str | None = None) -> MetricsEvidence:
    """The fleet's per-pod table (gate.evidence.fleet) plus the side facts; every failure is an error, never a pass."""
    source = f"Prometheus {redact_url(url)}"
    ev = MetricsEvidence(sources=[source])
    client = client_for(src, url)
    end = _end_time(src)
    ask = FleetAsk(slo=slo or SLO(window_seconds=window_seconds, lookback_seconds=lookback_seconds),
                   window_seconds=window_seconds, lookback_seconds=lookback_seconds, min_drafts=min_drafts,
                   end=end, k=k, method=method, require_engine_up=require_engine_up,
                   now=time.time() if now is None else now, served_model_name=served_model_name)
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
    # Canary against stable over the same window (gate.evidence.fleet.cohorts): its own errors, never the fleet's.
    ev.cohorts = cohort_evidence.collect(client, src, window_seconds, lookback_seconds, end, source)
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


@dataclass(frozen=True)
class PrometheusHistory:
    """An EvidenceSource: the exporter's counters in Prometheus (or Thanos/Mimir) over the plan's lookback."""

    source: PrometheusSource
    url: str
    slo: SLO | None = None
    k: int | None = None
    method: str | None = None
    require_engine_up: bool = True
    served_model_name: str | None = None

    @property
    def name(self) -> str:
        return f"Prometheus {redact_url(self.url)}"

    def collect(self, request: EvidenceRequest) -> MetricsEvidence:
        return collect(self.source, self.url, request.window_seconds, request.lookback_seconds, request.min_drafts,
                       slo=self.slo, k=self.k, method=self.method, require_engine_up=self.require_engine_up,
                       served_model_name=self.served_model_name)
