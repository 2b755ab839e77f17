"""gate.kube.api's retries: full jitter and Retry-After, through the real `kubernetes` client over real HTTP
against the loopback fake API server (tests/k8s/fakeapi.py), with a seeded RNG, a fixed clock and a recording
sleep, so every expected wait below is computed from the formula, not read off a run."""

from __future__ import annotations

import random
from email.utils import formatdate
from typing import Any

import pytest

from gate.kube.api import Conflict, KubeApi, retry_after_s
from tests.k8s.fakeapi import FakeKube
from tests.k8s.objects import NAMESPACE, deployment

DEP_PATH = r"/apis/apps/v1/namespaces/llm/deployments/qwen$"
NOW = 1_750_000_000.0
SEED = 24


def api(api_client: Any, sleeps: list[float], seed: int = SEED, **kw: Any) -> KubeApi:
    return KubeApi(api_client, NAMESPACE, sleep=sleeps.append, rng=random.Random(seed), clock=lambda: NOW, **kw)


def full_jitter(seed: int, n: int, base: float = 0.5, cap: float = 8.0) -> list[float]:
    """The AWS full-jitter waits the same seed must give: uniform(0, min(cap, base * 2**(k-1))), k = 1..n."""
    rng = random.Random(seed)
    return [rng.uniform(0.0, min(cap, base * 2 ** (k - 1))) for k in range(1, n + 1)]


def test_500s_wait_full_jitter_with_the_seeded_draws(fake_kube: FakeKube, api_client: Any) -> None:
    fake_kube.seed(deployment())
    fake_kube.fail("GET", DEP_PATH, status=500, times=3)
    sleeps: list[float] = []
    assert api(api_client, sleeps).get_deployment("qwen")["metadata"]["name"] == "qwen"
    assert fake_kube.count("GET", DEP_PATH, 500) == 3 and fake_kube.count("GET", DEP_PATH, 200) == 1
    assert sleeps == full_jitter(SEED, 3)
    assert [s <= c for s, c in zip(sleeps, [0.5, 1.0, 2.0], strict=True)] == [True] * 3


def test_the_cap_bounds_every_wait(fake_kube: FakeKube, api_client: Any) -> None:
    fake_kube.seed(deployment())
    fake_kube.fail("GET", DEP_PATH, status=502, times=7)
    sleeps: list[float] = []
    api(api_client, sleeps, retries=8, backoff_cap_s=1.5).get_deployment("qwen")
    assert sleeps == full_jitter(SEED, 7, cap=1.5)
    assert max(sleeps) <= 1.5


def test_replicas_with_different_seeds_do_not_wait_alike(fake_kube: FakeKube, api_client: Any) -> None:
    """The point of jitter: two controllers that failed together do not retry together."""
    fake_kube.seed(deployment())
    a: list[float] = []
    b: list[float] = []
    for sleeps, seed in ((a, 1), (b, 2)):
        fake_kube.fail("GET", DEP_PATH, status=500, times=2)
        api(api_client, sleeps, seed=seed).get_deployment("qwen")
    assert len(a) == len(b) == 2 and a != b


def test_429_retry_after_seconds_is_obeyed(fake_kube: FakeKube, api_client: Any) -> None:
    fake_kube.seed(deployment())
    fake_kube.fail("GET", DEP_PATH, status=429, times=1, headers={"Retry-After": "7"})
    fake_kube.fail("GET", DEP_PATH, status=500, times=1)
    sleeps: list[float] = []
    api(api_client, sleeps).get_deployment("qwen")
    # 7 s as asked (more than the jitter bound 0.5 of retry 1), then retry 2's jittered draw: the RNG was not
    # consumed by the Retry-After wait, so it is the seed's first draw scaled to retry 2's bound (1.0).
    assert sleeps == [7.0, random.Random(SEED).uniform(0.0, 1.0)]


def test_503_retry_after_http_date_is_obeyed(fake_kube: FakeKube, api_client: Any) -> None:
    fake_kube.seed(deployment())
    fake_kube.fail("PATCH", DEP_PATH, status=503, times=1, headers={"Retry-After": formatdate(NOW + 12, usegmt=True)})
    sleeps: list[float] = []
    api(api_client, sleeps).patch_deployment("qwen", {"metadata": {"labels": {"a": "b"}}})
    assert sleeps == [12.0]
    dep = fake_kube.get("Deployment", NAMESPACE, "qwen")
    assert dep is not None and dep["metadata"]["labels"]["a"] == "b"


def test_retry_after_over_the_limit_fails_now(fake_kube: FakeKube, api_client: Any) -> None:
    """An answer asking for an hour does not park the leader loop: no wait, the 429 propagates."""
    from kubernetes.client.exceptions import ApiException

    fake_kube.seed(deployment())
    fake_kube.fail("GET", DEP_PATH, status=429, times=1, headers={"Retry-After": "3600"})
    sleeps: list[float] = []
    with pytest.raises(ApiException) as e:
        api(api_client, sleeps).get_deployment("qwen")
    assert e.value.status == 429 and sleeps == [] and fake_kube.count("GET", DEP_PATH) == 1


def test_retry_after_on_a_500_is_not_the_servers_wait(fake_kube: FakeKube, api_client: Any) -> None:
    """RFC 9110 gives Retry-After its meaning on 503 (and 429, RFC 6585); on a 500 the jitter applies."""
    fake_kube.seed(deployment())
    fake_kube.fail("GET", DEP_PATH, status=500, times=1, headers={"Retry-After": "30"})
    sleeps: list[float] = []
    api(api_client, sleeps).get_deployment("qwen")
    assert sleeps == full_jitter(SEED, 1)


def test_409_is_not_retried(fake_kube: FakeKube, api_client: Any) -> None:
    current = fake_kube.seed(deployment())["metadata"]["resourceVersion"]
    stale = {"metadata": {"resourceVersion": str(int(current) - 1), "labels": {"a": "b"}}}
    sleeps: list[float] = []
    with pytest.raises(Conflict):
        api(api_client, sleeps).patch_deployment("qwen", stale)
    assert sleeps == []


@pytest.mark.parametrize(("raw", "want"), [
    ("0", 0.0), ("120", 120.0), (" 5 ", 5.0),
    (formatdate(NOW + 30, usegmt=True), 30.0),
    (formatdate(NOW - 30, usegmt=True), 0.0),  # a date in the past: no wait
    ("Sun, 06 Nov 1994 08:49:37 GMT", 0.0),  # RFC 9110's own example date
    ("-3", None), ("1.5", None), ("soon", None), ("", None),
])
def test_retry_after_forms(raw: str, want: float | None) -> None:
    assert retry_after_s({"Retry-After": raw}, NOW) == want


def test_no_retry_after_header() -> None:
    assert retry_after_s({}, NOW) is None and retry_after_s(None, NOW) is None
