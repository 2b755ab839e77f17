"""Kubernetes evidence: cold start → Ready from pod status (staging line) and the running image digest.

Why from pod status: the kubelet records when the engine container started (`state.running.startedAt`)
and when the pod became Ready (the `Ready` condition's `lastTransitionTime`); their difference is the
cold start to first ready request that seed 002's staging line budgets, measured by the cluster itself.
The `imageID` the kubelet reports is what actually runs, so the run record's `image_digest` comes from
there, not from the tag in the plan.

The backend has the evidence sources' shape (Flagger's providers: one small interface, typed "no
answer"): `PodsSource` is bound to its address (namespace, selector, container) and its
`collect(request)` returns the pods' facts or raises `Unreachable` (the client or its config failed,
the API server did not answer) or `BadAnswer` (an answer that is not a pod list). It returns facts,
never a verdict: the staging line judges the cold start.

The `kubernetes` client is imported lazily (it is an optional dependency). Functions take a
`kubernetes.client.ApiClient`, so tests point them at a loopback fake API server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from gate.evidence.base import BadAnswer, EvidenceRequest, Unreachable

if TYPE_CHECKING:  # pragma: no cover
    from kubernetes.client import ApiClient


@dataclass(frozen=True)
class PodStartup:
    """One pod's cold start: container start (or pod start) → Ready, and the image it runs."""

    pod: str
    container: str | None
    started_at: str | None
    ready_at: str | None
    seconds: float | None  # None while not Ready, or when the start is unknown
    start_source: str | None  # "container startedAt" | "pod startTime"
    image_id: str | None
    image_digest: str | None  # "sha256:..." when imageID names a repository digest
    restarts: int


@dataclass(frozen=True)
class KubeEvidence:
    """What the cluster says about a deployment's pods, for the staging line and the run record."""

    namespace: str
    selector: str
    pods: list[PodStartup] = field(default_factory=list)
    staging_seconds: float | None = None  # slowest Ready pod's cold start
    image_digest: str | None = None  # the one digest all pods run, else None
    image_digests: list[str] = field(default_factory=list)
    reason: str = ""


def parse_time(value: str | None) -> datetime | None:
    """RFC 3339 as the API server writes it (`2025-06-01T10:00:05Z`, MicroTime with fractions)."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def digest_of(image_id: str | None) -> str | None:
    """`docker.io/vllm/vllm-openai@sha256:…` → `sha256:…`; a bare image ID is not a repository digest."""
    if not image_id or "@" not in image_id:
        return None
    digest = image_id.rsplit("@", 1)[1]
    return digest if digest.startswith("sha256:") else None


def pod_startup(pod: dict[str, Any], container: str | None = None) -> PodStartup:
    """Read one pod (API JSON, camelCase) — pure, so it is testable on a recorded object."""
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    cs = next((c for c in statuses if c.get("name") == container), None) if container else None
    if cs is None and statuses:
        cs = statuses[0]
    running = ((cs or {}).get("state") or {}).get("running") or {}
    if running.get("startedAt"):
        started, source = running["startedAt"], "container startedAt"
    elif status.get("startTime"):
        started, source = status["startTime"], "pod startTime"
    else:
        started, source = None, None
    ready_cond = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    ready_at = ready_cond.get("lastTransitionTime") if ready_cond and ready_cond.get("status") == "True" else None
    t0, t1 = parse_time(started), parse_time(ready_at)
    seconds = (t1 - t0).total_seconds() if t0 and t1 and t1 >= t0 else None
    image_id = (cs or {}).get("imageID") or None
    return PodStartup(pod=pod["metadata"]["name"], container=(cs or {}).get("name"), started_at=started,
                      ready_at=ready_at, seconds=seconds, start_source=source, image_id=image_id,
                      image_digest=digest_of(image_id), restarts=int((cs or {}).get("restartCount") or 0))


def summarize(namespace: str, selector: str, pods: list[PodStartup]) -> KubeEvidence:
    """Slowest Ready pod is the staging number; one digest across pods, or none when they differ."""
    ready = [p.seconds for p in pods if p.seconds is not None]
    digests = sorted({p.image_digest for p in pods if p.image_digest})
    if not pods:
        reason = f"no pods match {selector!r} in namespace {namespace!r}"
    elif not ready:
        reason = f"{len(pods)} pod(s) found, none Ready yet"
    else:
        reason = f"{len(ready)} of {len(pods)} pod(s) Ready; slowest cold start {max(ready):g} s"
    if len(digests) > 1:
        reason += f"; pods run {len(digests)} different image digests"
    return KubeEvidence(namespace=namespace, selector=selector, pods=pods,
                        staging_seconds=max(ready) if ready else None,
                        image_digest=digests[0] if len(digests) == 1 else None,
                        image_digests=digests, reason=reason)


def collect(api_client: ApiClient, namespace: str, label_selector: str,
            container: str | None = None, timeout_s: float = 10.0) -> KubeEvidence:
    """List the pods behind `label_selector` and read their cold starts and image digests."""
    from kubernetes import client

    # _preload_content=False: the raw urllib3 response (the client's annotations name the decoded model).
    resp = cast(Any, client.CoreV1Api(api_client).list_namespaced_pod(
        namespace, label_selector=label_selector, _preload_content=False, _request_timeout=timeout_s))
    items = json.loads(resp.data).get("items") or []
    return summarize(namespace, label_selector, [pod_startup(p, container) for p in items])


def default_api_client() -> ApiClient:
    """In-cluster service account when running in a pod, else the local kubeconfig."""
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client.ApiClient()


def _first_line(e: BaseException) -> str:
    text = str(e).splitlines()[0][:160] if str(e) else ""
    return f"{type(e).__name__}: {text}"


@dataclass(frozen=True)
class PodsSource:
    """The Kubernetes backend bound to its pods; `client` None means the default client (in-cluster, else kubeconfig)."""

    namespace: str
    selector: str
    container: str | None = None
    client: Any = None

    @property
    def name(self) -> str:
        return f"kubernetes pods {self.selector!r} in {self.namespace!r}"

    def collect(self, request: EvidenceRequest | None = None) -> KubeEvidence:
        """The pods' cold starts and image digests; `Unreachable` / `BadAnswer` when there is no answer to read."""
        try:
            api = self.client if self.client is not None else default_api_client()
            return collect(api, self.namespace, self.selector, container=self.container)
        except (ValueError, KeyError, TypeError) as e:
            raise BadAnswer(_first_line(e)) from None
        except Exception as e:  # noqa: BLE001 - any client, config or transport failure is no answer
            raise Unreachable(_first_line(e)) from None
