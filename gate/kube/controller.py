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
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.inputs.loading import PLAN_LIMITS, read_bytes
from gate.kube.annotations import (
    ACTIVE,
    GATE_LABEL,
    LAST,
    PLAN_NAME_RE,
    REQUEST,
    DecisionRecord,
    format_time,
)
from gate.kube.api import Conflict, KubeApi
from gate.kube.engine_args import PlanRequestError, speculative_config, strip_speculative, with_speculative
from gate.kube.lease import LeaseElector
from gate.kube.pod_env import with_pod_env
from gate.plan.model import Plan
from gate.status import InputError
from gate.verdict.answer import GateAnswer, answer_of
from gate.verdict.gate_metrics import GateMetrics

if TYPE_CHECKING:  # pragma: no cover
    from kubernetes.client import ApiClient

    from gate.verdict.evaluate import Evaluator

log = logging.getLogger(__name__)

# What loading a plan gave: the plan, or the one-line reason it could not be loaded.
Loaded = tuple[Plan | None, str | None]


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


class Controller:
    """Reconciles labelled Deployments; `step()` is one leader check + list + reconcile (tests drive it)."""

    def __init__(self, api_client: ApiClient, config: ControllerConfig, evaluator: Evaluator | None = None,
                 load_plan: Callable[[Path], Plan] | None = None, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep, metrics: GateMetrics | None = None) -> None:
        if evaluator is None:
            from gate.verdict.evaluate import service_evaluator

            evaluator = service_evaluator(kube_client=api_client)
        if load_plan is None:
            from gate.plan.model import load_plan as real_load_plan

            load_plan = real_load_plan
        self.api_client = api_client
        self.config = config
        self.evaluator = evaluator
        self.load_plan = load_plan
        self.clock = clock
        self.kube = KubeApi(api_client, config.namespace, retries=config.api_retries, backoff_s=config.api_backoff_s,
                            timeout_s=config.api_timeout_s, sleep=sleep)
        self.elector = LeaseElector(self.kube, config.lease_name, config.identity, config.lease_duration_s, clock)
        self.metrics = metrics or GateMetrics()
        # Per reconcile, so a 409 retry re-uses them: each plan is loaded once, each phase judged once.
        self._plans: dict[tuple[Path, str], Loaded] = {}
        self._verdicts: dict[tuple[str, str, str], DecisionRecord] = {}

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
        try:  # gate.inputs: a regular file under the plan's size limit, never waited on
            data = read_bytes(path, "plan", PLAN_LIMITS.max_bytes)
        except InputError as e:
            raise PlanRequestError(str(e)) from None
        return path, hashlib.sha256(data).hexdigest()[:16]

    def plan_at(self, path: Path, digest: str) -> Loaded:
        """The plan at `path` (content `digest`), loaded once per reconcile; or why it could not be."""
        key = (path, digest)
        if key not in self._plans:
            try:
                self._plans[key] = (self.load_plan(path), None)
            except Exception as e:  # the plan loader's errors are one-line messages
                self._plans[key] = (None, str(e))
        return self._plans[key]

    def _record_of(self, request: str, digest: str, phase: str, decision: str, reasons: list[str]) -> DecisionRecord:
        return DecisionRecord(request, digest, phase, decision, reasons, self.clock(), self.config.identity)

    def judge(self, deployment: str, request: str, path: Path, digest: str, phase: str,
              container: dict[str, Any] | None = None) -> tuple[DecisionRecord, Plan | None]:
        """Evaluate the plan in one phase; an evaluator error is inconclusive, never a pass. The engine
        container's simulation variables are judged with it (`gate.kube.pod_env`): what the pod runs."""
        plan, error = self.plan_at(path, digest)
        if plan is None:
            return self._record_of(request, digest, phase, "inconclusive", [f"plan: {error}"]), None
        key = (request, digest, phase)
        if key not in self._verdicts:
            judged = with_pod_env(plan, container) if container is not None else plan
            try:
                answer = answer_of(self.evaluator(judged, phase=phase, metrics=self.config.metrics,
                                                  prometheus=self.config.prometheus), phase)
            except Exception as e:
                log.warning("%s: evaluation failed: %s: %s", deployment, type(e).__name__, e)
                answer = GateAnswer.failed(phase, f"evaluation failed: {type(e).__name__}: {e}")
            self._verdicts[key] = self._record_of(request, digest, phase, answer.decision.value, answer.reasons())
            self.metrics.record_answer(deployment, answer)
        return self._verdicts[key], plan

    # ---- reconcile ----
    def reconcile(self, name: str, dep: dict[str, Any] | None = None, post: bool = True) -> str:
        """Bring one Deployment to what its request and the gate allow; returns what was done."""
        self._plans, self._verdicts = {}, {}
        for _ in range(5):  # 409: someone wrote in between; read again and decide again
            dep = dep or self.kube.get_deployment(name)
            try:
                return self._reconcile_once(dep, post)
            except Conflict:
                dep = None
        return "conflict"

    def _reconcile_once(self, dep: dict[str, Any], post: bool) -> str:
        meta = dep["metadata"]
        ann = meta.get("annotations") or {}
        request, active = ann.get(REQUEST) or None, ann.get(ACTIVE) or None
        last = DecisionRecord.from_annotation(ann.get(LAST))
        now = self.clock()
        if request is None:
            if active is None:
                return "idle"
            return self._turn_off(dep, self._record_of(active, "", "request", "removed", [f"{REQUEST} was removed"]),
                                  "DrafterRemoved", "Normal")
        try:
            path, digest = self.resolve(request)
            container = self._container(dep)
        except PlanRequestError as e:
            if (last is not None and last.plan == request and last.decision == "invalid" and last.reasons == [str(e)]
                    and last.holds_backoff(now, self.config.backoff_s)):
                return "backoff"  # already said why; say it again only after the backoff
            return self._record(dep, self._record_of(request, "", "pre", "invalid", [str(e)]), "GateInvalidRequest")
        args_now: list[str] = container.get("args") or []
        if request == active:
            plan, _ = self.plan_at(path, digest)
            try:
                desired = (with_speculative(args_now, plan.engine.kind, speculative_config(plan))
                           if plan is not None else None)
            except PlanRequestError:
                desired = None  # judged below, where a broken plan becomes an inconclusive decision
            if desired == args_now:
                return self._watch_slo(dep, request, path, digest) if post else "running"
        if (last is not None and last.plan == request and last.digest == digest and last.decision != "pass"
                and last.holds_backoff(now, self.config.backoff_s)):
            return "backoff"  # the same request and plan were refused recently: no flapping
        decision, plan = self.judge(meta["name"], request, path, digest, "pre", container)
        if decision.decision != "pass" or plan is None:
            return self._record(dep, decision, "GateFailed" if decision.decision == "fail" else "GateInconclusive")
        try:
            args = with_speculative(args_now, plan.engine.kind, speculative_config(plan))
        except PlanRequestError as e:
            return self._record(dep, self._record_of(request, digest, "pre", "invalid", [str(e)]),
                                "GateInvalidRequest")
        body = {"metadata": {"resourceVersion": meta["resourceVersion"],
                             "annotations": {ACTIVE: request, LAST: decision.to_annotation()}},
                "spec": {"template": {"spec": {"containers": [{"name": container["name"], "args": args}]}}}}
        patched = self.kube.patch_deployment(meta["name"], body)
        self._event(patched, "DrafterEnabled", "Normal",
                    f"gate passed (phase pre) for plan {request} ({digest}); drafter on: "
                    f"{json.dumps(speculative_config(plan), sort_keys=True)}")
        return "enabled"

    def _watch_slo(self, dep: dict[str, Any], request: str, path: Path, digest: str) -> str:
        decision, _ = self.judge(dep["metadata"]["name"], request, path, digest, "post", self._container(dep))
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
        meta, now = dep["metadata"], format_time(self.clock())
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
            log.warning("event %s on %s not recorded: %s", reason, meta["name"], e)

    # ---- loop ----
    def resync(self) -> str:
        """List every gated Deployment, reconcile each (post SLO included); returns the list's resourceVersion."""
        listing = self.kube.list_deployments(GATE_LABEL, self.config.deployment)
        for dep in listing.get("items") or []:
            name = dep["metadata"]["name"]
            try:
                action = self.reconcile(name, dep, post=True)
                if action not in ("idle", "running", "backoff"):
                    log.info("%s/%s: %s", self.config.namespace, name, action)
            except Exception as e:
                log.error("%s/%s: %s: %s", self.config.namespace, name, type(e).__name__, e)
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
                        log.error("%s: %s: %s", obj["metadata"]["name"], type(e).__name__, e)
        except ApiException as e:
            if e.status == 410:
                log.info("watch expired (410 Gone); listing again")
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
                log.error("%s: %s", type(e).__name__, e)
                stop.wait(min(self.config.interval_s, 5.0))
