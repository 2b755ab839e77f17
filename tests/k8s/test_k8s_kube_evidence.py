"""Kubernetes evidence read by the real `kubernetes` client from the fake API server over real HTTP.

Hand-computed: the engine container started 10:00:05Z and the Ready condition turned True 10:01:52Z,
so cold start → Ready = 1 min 47 s = 107 s; the digest is the part of `imageID` after `@`.
"""

from __future__ import annotations

from gate.evidence.pods import collect, digest_of, pod_startup
from tests.k8s.fakeapi import FakeKube
from tests.k8s.objects import DIGEST, NAMESPACE, pod


def test_staging_seconds_and_digest_from_pod_status(fake_kube: FakeKube, api_client) -> None:
    fake_kube.seed(pod())
    ev = collect(api_client, NAMESPACE, "app.kubernetes.io/instance=qwen", container="engine")
    assert ev.staging_seconds == 107.0
    assert ev.image_digest == DIGEST
    assert ev.pods[0].start_source == "container startedAt"
    assert ev.pods[0].container == "engine"
    # the client asked with the label selector, over real HTTP
    assert fake_kube.requests[-1].query["labelSelector"] == "app.kubernetes.io/instance=qwen"


def test_slowest_ready_pod_counts_and_unready_pods_do_not(fake_kube: FakeKube, api_client) -> None:
    fake_kube.seed(pod("qwen-7d9f8b6c5-aaaaa"))  # 107 s
    fake_kube.seed(pod("qwen-7d9f8b6c5-bbbbb", started_at="2025-06-01T10:00:10Z",
                       ready_at="2025-06-01T10:03:40Z"))  # 3 min 30 s = 210 s
    fake_kube.seed(pod("qwen-7d9f8b6c5-ccccc", ready_at=None, ready=False))  # still loading
    ev = collect(api_client, NAMESPACE, "app.kubernetes.io/instance=qwen", container="engine")
    assert ev.staging_seconds == 210.0
    assert [p.seconds for p in ev.pods] == [107.0, 210.0, None]
    assert "2 of 3 pod(s) Ready" in ev.reason


def test_no_pods_is_no_evidence(fake_kube: FakeKube, api_client) -> None:
    fake_kube.seed(pod(instance="other"))
    ev = collect(api_client, NAMESPACE, "app.kubernetes.io/instance=qwen")
    assert ev.staging_seconds is None and ev.image_digest is None
    assert "no pods match" in ev.reason


def test_pod_start_time_when_the_container_is_not_running() -> None:
    p = pod()
    p["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "ContainerCreating"}}
    got = pod_startup(p, "engine")
    # startTime 10:00:01Z → Ready 10:01:52Z = 111 s
    assert got.start_source == "pod startTime" and got.seconds == 111.0


def test_mixed_digests_give_no_single_digest(fake_kube: FakeKube, api_client) -> None:
    fake_kube.seed(pod("qwen-7d9f8b6c5-aaaaa"))
    fake_kube.seed(pod("qwen-7d9f8b6c5-bbbbb", image_id="docker.io/vllm/vllm-openai@sha256:" + "a" * 64))
    ev = collect(api_client, NAMESPACE, "app.kubernetes.io/instance=qwen", container="engine")
    assert ev.image_digest is None and len(ev.image_digests) == 2
    assert "2 different image digests" in ev.reason


def test_digest_of_forms() -> None:
    assert digest_of("docker-pullable://vllm/vllm-openai@sha256:" + "b" * 64) == "sha256:" + "b" * 64
    assert digest_of("sha256:" + "c" * 64) is None  # a local image ID is not a repository digest
    assert digest_of(None) is None


def test_a_plan_without_a_container_reads_the_engine_not_the_sidecar() -> None:
    from gate.plan.model import KubernetesSource

    p = pod()
    p["status"]["containerStatuses"].reverse()  # the exporter's status listed first
    st = pod_startup(p, KubernetesSource(namespace=NAMESPACE).container)
    # the engine started at 10:00:05 and was Ready at 10:01:52 (objects.pod): 107 s, and its image digest
    assert st.container == "engine"
    assert st.seconds == 107.0 and st.image_id.startswith("docker.io/vllm/vllm-openai@")


def test_the_pods_source_has_the_evidence_sources_shape(fake_kube: FakeKube, api_client) -> None:
    """`PodsSource` is bound to its pods, returns facts, and has no answer as a typed error: an API server that is
    not there is `Unreachable` (real client, a closed loopback port), never an exception the gate has to guess at."""
    import socket

    import pytest
    from kubernetes import client

    from gate.evidence.base import EvidenceError, Unreachable
    from gate.evidence.pods import PodsSource

    fake_kube.seed(pod())
    src = PodsSource(NAMESPACE, "app.kubernetes.io/instance=qwen", container="engine", client=api_client)
    assert src.collect().staging_seconds == 107.0 and "qwen" in src.name
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    cfg.retries = 0
    gone = PodsSource(NAMESPACE, "app=x", client=client.ApiClient(cfg))
    with pytest.raises(Unreachable) as err:
        gone.collect()
    assert isinstance(err.value, EvidenceError) and "\n" not in str(err.value)
