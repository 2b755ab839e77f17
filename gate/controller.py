"""The Kubernetes controller: turn the drafter on only after the gate passes, and off when the SLO fails.

Why a controller: a team without Argo Rollouts or Flagger still needs "no drafter until the gate says
yes". It watches Deployments labelled `specgate.io/gate: "true"`. Annotations carry the protocol:

- `specgate.io/drafter-request` (set by people): names the drafter plan wanted — with `--plan FILE`
  any name selects that plan; with `--plan DIR` it selects `DIR/<name>.yaml`.
- `specgate.io/drafter-active` (set here): the request that runs now.
- `specgate.io/last-decision` (set here): JSON of the last decision — plan, plan digest, phase,
  decision, reasons, time, and who decided.

When the request differs from what runs, the plan is judged `--phase pre`; on pass one PATCH turns the
drafter on (the engine container's speculative flags + the annotations), with an Event. On fail or
inconclusive only the decision annotation changes, with a Warning Event saying why. While a drafter
runs, each resync judges `--phase post`; a failed acceptance SLO turns it off again, with an Event.
It never flaps: a decision that did not pass is retried only when the request or the plan changes,
or after `backoff_s`.

Safety: every change is one PATCH carrying `metadata.resourceVersion` (optimistic concurrency: 409 →
re-read and decide again), so an API error mid-way leaves either the old or the new Deployment, never
half of each; transient errors (5xx, 429, connection) are retried with exponential backoff; a watch
that expired (410 Gone) is answered by listing again; a coordination.k8s.io/v1 Lease elects one leader
among replicas, and only the leader acts.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.webhook import Evaluator, GateMetrics, answer_from, reasons_of

if TYPE_CHECKING:  # pragma: no cover
    from kubernetes.client import ApiClient

GATE_LABEL = "specgate.io/gate=true"
REQUEST = "specgate.io/drafter-request"
ACTIVE = "specgate.io/drafter-active"
LAST = "specgate.io/last-decision"
PLAN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
SGLANG_ALGORITHM = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN", "nextn": "NEXTN", "ngram": "NGRAM",
                    "draft_model": "STANDALONE", "dflash": "DFLASH", "dspark": "DSPARK"}
VLLM_METHOD = {"nextn": "mtp"}


@dataclass(frozen=True)
class ControllerConfig:
    """What `specgate controller` acts on; plain data built from its flags."""

    namespace: str
    plan: Path
    identity: str
    deployment: str | None = None  # None: every Deployment labelled specgate.io/gate=true
    container: str = "engine"
    interval_s: float = 30.0
    lease_name: str = "specgate-controller"
    lease_duration_s: int = 90
    backoff_s: float = 600.0
    prometheus: str | None = None
    metrics: tuple[str, ...] = ()
    api_retries: int = 4
    api_backoff_s: float = 0.5
    # Client-side timeout of every API call (and the slack over a watch's server-side timeoutSeconds): on a
    # connection that goes silent the client would otherwise wait forever, holding up the whole loop.
    api_timeout_s: float = 30.0


@dataclass(frozen=True)
class DecisionRecord:
    """One judged request: what the annotation and the Event say."""

    plan: str
    digest: str
    phase: str
    decision: str
    reasons: list[str]
    at: float
    by: str

    def to_annotation(self) -> str:
        return json.dumps({"plan": self.plan, "digest": self.digest, "phase": self.phase,
                           "decision": self.decision, "reasons": self.reasons,
                           "at": datetime.fromtimestamp(self.at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                           "by": self.by}, separators=(",", ":"))

    @staticmethod
    def from_annotation(text: str | None) -> dict[str, Any]:
        try:
            data = json.loads(text or "{}")
        except json.JSONDecodeError:
            return {}
        return data if isinstance(data, dict) else {}


class PlanRequestError(ValueError):
    """The request names no usable plan; said in the annotation and an Event, never a traceback."""


def speculative_config(plan: Any) -> dict[str, Any]:
    """The engine flags' content for the plan's speculative settings, in the chart's convention.

    vLLM: the `--speculative-config` JSON. SGLang: keys that become `--speculative-<key>` flags.
    """
    spec = plan.engine.speculative
    if spec is None:
        raise PlanRequestError("the plan sets no engine.speculative: there is no drafter to turn on")
    drafter = getattr(plan, "drafter", None)
    model = drafter.name if drafter is not None and not drafter.embedded and drafter.name else None
    if plan.engine.kind == "vllm":
        cfg: dict[str, Any] = {"method": VLLM_METHOD.get(spec.method, spec.method)}
        if model:
            cfg["model"] = model
        if spec.num_speculative_tokens:
            cfg["num_speculative_tokens"] = spec.num_speculative_tokens
        return cfg
    cfg = {"algorithm": SGLANG_ALGORITHM.get(spec.method, spec.method.upper())}
    if model:
        cfg["draft_model_path"] = model
    for key in ("num_steps", "eagle_topk", "num_draft_tokens"):
        if getattr(spec, key, None):
            cfg[key] = getattr(spec, key)
    return cfg


def strip_speculative(args: list[str]) -> list[str]:
    """The engine args without any `--speculative-*` flag (and its value, `=value` or the next arg)."""
    out: list[str] = []
    skip = False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a.startswith("--speculative-") or a.startswith("--speculative_"):
            nxt = args[i + 1] if i + 1 < len(args) else None
            skip = "=" not in a and nxt is not None and not nxt.startswith("--")
            continue
        out.append(a)
    return out


def with_speculative(args: list[str], engine: str, cfg: dict[str, Any]) -> list[str]:
    base = strip_speculative(args)
    if engine == "vllm":
        return base + ["--speculative-config", json.dumps(cfg, sort_keys=True, separators=(",", ":"))]
    flags: list[str] = []
    for k, v in cfg.items():
        flag = "--speculative-" + k.replace("_", "-")
        if v is True:
            flags.append(flag)
        elif v is not False and v is not None:
            flags += [flag, str(v)]
    return base + flags


def micro_time(ts: float) -> str:
    """metav1.MicroTime as the API server writes it."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def transient(e: Exception) -> bool:
    """Worth retrying: 5xx, 429, or no HTTP answer at all."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    if isinstance(e, ApiException):
        return e.status == 429 or (e.status or 0) >= 500
    return isinstance(e, HTTPError | ConnectionError | TimeoutError)


def status_of(e: Exception) -> int | None:
    from kubernetes.client.exceptions import ApiException

    return e.status if isinstance(e, ApiException) else None


class Kube:
    """The few API calls the controller makes, as plain dicts, each retried on transient errors."""

    def __init__(self, api_client: ApiClient, config: ControllerConfig,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        from kubernetes import client

        self.apps = client.AppsV1Api(api_client)
        self.core = client.CoreV1Api(api_client)
        self.coord = client.CoordinationV1Api(api_client)
        self.config = config
        self.sleep = sleep

    def retry(self, what: str, call: Callable[[], Any]) -> Any:
        delay = self.config.api_backoff_s
        for attempt in range(1, self.config.api_retries + 1):
            try:
                resp = call()
                return json.loads(resp.data) if hasattr(resp, "data") else resp
            except Exception as e:
                if not transient(e) or attempt == self.config.api_retries:
                    raise
                print(f"specgate controller: {what} failed ({status_of(e) or type(e).__name__}); "
                      f"retry {attempt}/{self.config.api_retries - 1} in {delay:g} s", file=sys.stderr)
                self.sleep(delay)
                delay *= 2

    def list_deployments(self) -> dict[str, Any]:
        c = self.config
        fields = f"metadata.name={c.deployment}" if c.deployment else None
        return self.retry("list deployments", lambda: self.apps.list_namespaced_deployment(
            c.namespace, label_selector=GATE_LABEL, field_selector=fields, _preload_content=False,
            _request_timeout=c.api_timeout_s))

    def get_deployment(self, name: str) -> dict[str, Any]:
        return self.retry(f"get deployment {name}", lambda: self.apps.read_namespaced_deployment(
            name, self.config.namespace, _preload_content=False, _request_timeout=self.config.api_timeout_s))

    def patch_deployment(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.retry(f"patch deployment {name}", lambda: self.apps.patch_namespaced_deployment(
            name, self.config.namespace, body, _content_type="application/strategic-merge-patch+json",
            _preload_content=False, _request_timeout=self.config.api_timeout_s))

    def create_event(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.retry("create event", lambda: self.core.create_namespaced_event(
            self.config.namespace, body, _preload_content=False, _request_timeout=self.config.api_timeout_s))


class LeaseElector:
    """Leader election on one coordination.k8s.io/v1 Lease: hold it by renewing before it expires.

    Whoever holds an unexpired Lease leads; others wait. Writes carry the Lease's resourceVersion, so
    two candidates racing for an expired Lease cannot both win (the loser gets 409). Expiry is counted on
    this replica's clock from when it last *saw* the record change (as client-go does; the API reference:
    "measured against the time of last observed renewTime"), never from the holder's clock, so clock skew
    between nodes cannot hand a live leader's Lease to a second replica.
    """

    def __init__(self, api_client: ApiClient, config: ControllerConfig,
                 clock: Callable[[], float] = time.time) -> None:
        from kubernetes import client

        self.coord = client.CoordinationV1Api(api_client)
        self.config = config
        self.clock = clock
        self._observed: tuple[Any, Any] | None = None  # (holderIdentity, renewTime) last seen
        self._observed_at = 0.0  # our clock when it was first seen

    def try_acquire_or_renew(self) -> bool:
        from kubernetes.client.exceptions import ApiException

        c, now = self.config, self.clock()
        try:
            lease = json.loads(self.coord.read_namespaced_lease(c.lease_name, c.namespace, _preload_content=False,
                                                                _request_timeout=c.api_timeout_s).data)
        except ApiException as e:
            if e.status != 404:
                return False  # cannot confirm leadership: do not act
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": c.lease_name, "namespace": c.namespace},
                    "spec": {"holderIdentity": c.identity, "leaseDurationSeconds": c.lease_duration_s,
                             "acquireTime": micro_time(now), "renewTime": micro_time(now), "leaseTransitions": 0}}
            try:
                self.coord.create_namespaced_lease(c.namespace, body, _preload_content=False,
                                                   _request_timeout=c.api_timeout_s)
                return True
            except ApiException:
                return False  # someone else created it first (409), or the API is failing
        except Exception:
            return False
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        duration = spec.get("leaseDurationSeconds") or c.lease_duration_s
        record = (holder, spec.get("renewTime"))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        if holder and holder != c.identity and self._observed_at + duration > now:
            return False
        if holder != c.identity:
            spec["acquireTime"] = micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec.update(holderIdentity=c.identity, renewTime=micro_time(now), leaseDurationSeconds=c.lease_duration_s)
        lease["spec"] = spec
        try:
            self.coord.replace_namespaced_lease(c.lease_name, c.namespace, lease, _preload_content=False,
                                                _request_timeout=c.api_timeout_s)
            return True
        except Exception:
            return False  # 409: another candidate renewed or took it first


class Controller:
    """Reconciles labelled Deployments; `step()` is one leader check + list + reconcile (tests drive it)."""

    def __init__(self, api_client: ApiClient, config: ControllerConfig, evaluator: Evaluator | None = None,
                 load_plan: Callable[[Path], Any] | None = None, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep, metrics: GateMetrics | None = None) -> None:
        if evaluator is None:
            from gate.webhook import real_evaluator

            evaluator = real_evaluator(kube_client=api_client)
        if load_plan is None:
            from gate.plan import load_plan as real_load_plan

            load_plan = real_load_plan
        self.api_client = api_client
        self.config = config
        self.evaluator = evaluator
        self.load_plan = load_plan
        self.clock = clock
        self.kube = Kube(api_client, config, sleep)
        self.elector = LeaseElector(api_client, config, clock)
        self.metrics = metrics or GateMetrics()
        self._verdicts: dict[tuple[str, str, str], DecisionRecord] = {}  # per reconcile, so a 409 retry re-uses it

    # ---- plans and verdicts ----
    def resolve(self, request: str) -> tuple[Path, str]:
        """The plan file a request names, and its content digest (a changed plan is a new request)."""
        base = self.config.plan
        if base.is_dir():
            if not PLAN_NAME_RE.match(request):
                raise PlanRequestError(f"{REQUEST} {request!r} is not a plan name")
            path = next((base / f"{request}{ext}" for ext in (".yaml", ".yml") if (base / f"{request}{ext}").is_file()),
                        None)
            if path is None:
                raise PlanRequestError(f"no plan {request}.yaml in {base}")
        else:
            path = base
        try:
            data = path.read_bytes()
        except OSError as e:
            raise PlanRequestError(f"cannot read plan {path}: {e.strerror}") from None
        return path, hashlib.sha256(data).hexdigest()[:16]

    def judge(self, deployment: str, request: str, path: Path, digest: str, phase: str) -> tuple[DecisionRecord, Any]:
        """Evaluate the plan in one phase; an evaluator error is inconclusive, never a pass."""
        plan: Any = None
        try:
            plan = self.load_plan(path)
        except Exception as e:  # the plan loader's errors are one-line messages
            return DecisionRecord(request, digest, phase, "inconclusive", [f"plan: {e}"], self.clock(),
                            self.config.identity), None
        key = (request, digest, phase)
        if key not in self._verdicts:
            try:
                verdict = self.evaluator(plan, phase=phase, metrics=self.config.metrics,
                                         prometheus=self.config.prometheus)
                answer = answer_from(verdict.to_json())
            except Exception as e:
                answer = {"decision": "inconclusive", "phase": phase,
                          "checks": {"gate": {"status": "inconclusive",
                                              "reason": f"evaluation failed: {type(e).__name__}: {e}"}}}
            self._verdicts[key] = DecisionRecord(request, digest, phase, answer["decision"], reasons_of(answer),
                                           self.clock(), self.config.identity)
            self.metrics.record(deployment, answer["decision"],
                                {line: r["status"] for line, r in answer["checks"].items()})
        return self._verdicts[key], plan

    # ---- reconcile ----
    def reconcile(self, name: str, dep: dict[str, Any] | None = None, post: bool = True) -> str:
        """Bring one Deployment to what its request and the gate allow; returns what was done."""
        from kubernetes.client.exceptions import ApiException

        self._verdicts = {}
        for _ in range(5):  # 409: someone wrote in between; read again and decide again
            dep = dep or self.kube.get_deployment(name)
            try:
                return self._reconcile_once(dep, post)
            except ApiException as e:
                if e.status != 409:
                    raise
                dep = None
        return "conflict"

    def _reconcile_once(self, dep: dict[str, Any], post: bool) -> str:
        meta = dep["metadata"]
        ann = meta.get("annotations") or {}
        request, active = ann.get(REQUEST) or None, ann.get(ACTIVE) or None
        last = DecisionRecord.from_annotation(ann.get(LAST))
        if request is None:
            if active is None:
                return "idle"
            return self._turn_off(dep, DecisionRecord(active, "", "request", "removed",
                                                [f"{REQUEST} was removed"], self.clock(), self.config.identity),
                                  "DrafterRemoved", "Normal")
        try:
            path, digest = self.resolve(request)
            container = self._container(dep)
        except PlanRequestError as e:
            if last.get("plan") == request and last.get("decision") == "invalid" and last.get("reasons") == [str(e)] \
                    and (parse_time(last.get("at")) or 0) + self.config.backoff_s > self.clock():
                return "backoff"  # already said why; say it again only after the backoff
            return self._record(dep, DecisionRecord(request, "", "pre", "invalid", [str(e)], self.clock(),
                                              self.config.identity), "GateInvalidRequest")
        if request == active:
            try:
                plan = self.load_plan(path)
                desired = with_speculative(container.get("args") or [], plan.engine.kind, speculative_config(plan))
            except Exception:
                desired = None  # judged below, where a broken plan becomes an inconclusive decision
            if desired == (container.get("args") or []):
                return self._watch_slo(dep, request, path, digest) if post else "running"
        if (last.get("plan") == request and last.get("digest") == digest and last.get("decision") != "pass"
                and (parse_time(last.get("at")) or 0) + self.config.backoff_s > self.clock()):
            return "backoff"  # the same request and plan were refused recently: no flapping
        decision, plan = self.judge(meta["name"], request, path, digest, "pre")
        if decision.decision != "pass":
            return self._record(dep, decision, "GateFailed" if decision.decision == "fail" else "GateInconclusive")
        try:
            args = with_speculative(container.get("args") or [], plan.engine.kind, speculative_config(plan))
        except PlanRequestError as e:
            return self._record(dep, DecisionRecord(request, digest, "pre", "invalid", [str(e)], self.clock(),
                                              self.config.identity), "GateInvalidRequest")
        body = {"metadata": {"resourceVersion": meta["resourceVersion"],
                             "annotations": {ACTIVE: request, LAST: decision.to_annotation()}},
                "spec": {"template": {"spec": {"containers": [{"name": container["name"], "args": args}]}}}}
        patched = self.kube.patch_deployment(meta["name"], body)
        self._event(patched, "DrafterEnabled", "Normal",
                    f"gate passed (phase pre) for plan {request} ({digest}); drafter on: "
                    f"{json.dumps(speculative_config(plan), sort_keys=True)}")
        return "enabled"

    def _watch_slo(self, dep: dict[str, Any], request: str, path: Path, digest: str) -> str:
        decision, _ = self.judge(dep["metadata"]["name"], request, path, digest, "post")
        if decision.decision != "fail":
            return "running"  # pass, or not enough data yet: missing data never turns anything off
        return self._turn_off(dep, decision, "DrafterDisabled", "Warning")

    def _turn_off(self, dep: dict[str, Any], decision: DecisionRecord, reason: str, etype: str) -> str:
        meta = dep["metadata"]
        container = self._container(dep)
        body = {"metadata": {"resourceVersion": meta["resourceVersion"],
                             "annotations": {ACTIVE: None, LAST: decision.to_annotation()}},
                "spec": {"template": {"spec": {"containers": [
                    {"name": container["name"], "args": strip_speculative(container.get("args") or [])}]}}}}
        patched = self.kube.patch_deployment(meta["name"], body)
        why = "; ".join(decision.reasons) or decision.decision
        self._event(patched, reason, etype, f"drafter off (plan {decision.plan}, phase {decision.phase}): {why}")
        return "disabled"

    def _record(self, dep: dict[str, Any], decision: DecisionRecord, reason: str) -> str:
        """A refusal: only the decision annotation changes (the pod template stays as it is)."""
        meta = dep["metadata"]
        body = {"metadata": {"resourceVersion": meta["resourceVersion"],
                             "annotations": {LAST: decision.to_annotation()}}}
        patched = self.kube.patch_deployment(meta["name"], body)
        why = "; ".join(decision.reasons) or decision.decision
        self._event(patched, reason, "Warning",
                    f"drafter stays off: gate {decision.decision} (phase {decision.phase}) for plan "
                    f"{decision.plan}: {why}")
        return decision.decision

    def _container(self, dep: dict[str, Any]) -> dict[str, Any]:
        containers = dep["spec"]["template"]["spec"].get("containers") or []
        found = next((c for c in containers if c.get("name") == self.config.container), None)
        if found is None:
            raise PlanRequestError(f"no container named {self.config.container!r} in the pod template")
        return found

    def _event(self, dep: dict[str, Any], reason: str, etype: str, message: str) -> None:
        """A core/v1 Event on the Deployment; losing one is logged, the annotation already holds the decision."""
        meta, now = dep["metadata"], datetime.fromtimestamp(self.clock(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
                "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": meta["name"],
                                   "namespace": meta["namespace"], "uid": meta.get("uid"),
                                   "resourceVersion": meta.get("resourceVersion")},
                "reason": reason, "message": message[:1024], "type": etype,
                "source": {"component": "specgate-controller"},
                "reportingComponent": "specgate.io/controller", "reportingInstance": self.config.identity,
                "firstTimestamp": now, "lastTimestamp": now, "count": 1}
        try:
            self.kube.create_event(body)
        except Exception as e:
            print(f"specgate controller: event {reason} on {meta['name']} not recorded: {e}", file=sys.stderr)

    # ---- loop ----
    def resync(self) -> str:
        """List every gated Deployment, reconcile each (post SLO included); returns the list's resourceVersion."""
        listing = self.kube.list_deployments()
        for dep in listing.get("items") or []:
            name = dep["metadata"]["name"]
            try:
                action = self.reconcile(name, dep, post=True)
                if action not in ("idle", "running", "backoff"):
                    print(f"specgate controller: {self.config.namespace}/{name}: {action}", file=sys.stderr)
            except Exception as e:
                print(f"specgate controller: {self.config.namespace}/{name}: {type(e).__name__}: {e}",
                      file=sys.stderr)
        return listing["metadata"]["resourceVersion"]

    def step(self) -> bool:
        """One leader check and resync; False when another replica leads."""
        if not self.elector.try_acquire_or_renew():
            return False
        self.resync()
        return True

    def watch(self, resource_version: str, timeout_s: float) -> str | None:
        """React to request changes until the watch times out; None when it expired (410: list again)."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        w = watch.Watch()
        rv: str | None = resource_version
        try:
            for event in w.stream(self.kube.apps.list_namespaced_deployment, self.config.namespace,
                                  label_selector=GATE_LABEL, resource_version=resource_version,
                                  timeout_seconds=max(1, int(timeout_s)),
                                  # timeoutSeconds is the server's; a silent connection needs the client's too
                                  _request_timeout=(self.config.api_timeout_s,
                                                    max(1, int(timeout_s)) + self.config.api_timeout_s),
                                  field_selector=f"metadata.name={self.config.deployment}"
                                  if self.config.deployment else None):
                obj = event["raw_object"]
                rv = obj["metadata"]["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    try:
                        self.reconcile(obj["metadata"]["name"], obj, post=False)
                    except Exception as e:
                        print(f"specgate controller: {obj['metadata']['name']}: {type(e).__name__}: {e}",
                              file=sys.stderr)
        except ApiException as e:
            if e.status == 410:
                print("specgate controller: watch expired (410 Gone); listing again", file=sys.stderr)
                return None
            raise
        finally:
            w.stop()
        return rv

    def run(self, stop: threading.Event) -> None:
        """Until `stop`: lead or wait; resync every interval; between resyncs, watch for new requests."""
        while not stop.is_set():
            try:
                if not self.elector.try_acquire_or_renew():
                    stop.wait(min(self.config.interval_s, 5.0))
                    continue
                rv = self.resync()
                window = min(self.config.interval_s, self.config.lease_duration_s / 3)
                self.watch(rv, window)
            except Exception as e:  # API down: wait and try again, never crash the loop
                print(f"specgate controller: {type(e).__name__}: {e}", file=sys.stderr)
                stop.wait(min(self.config.interval_s, 5.0))
