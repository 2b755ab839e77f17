"""Fixtures for the Kubernetes-facing tests: a loopback fake API server and a real client pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.k8s.fakeapi import FakeKube


@pytest.fixture
def fake_kube() -> Iterator[FakeKube]:
    kube = FakeKube()
    kube.base_url = kube.start()  # type: ignore[attr-defined]
    yield kube
    kube.stop()


@pytest.fixture
def api_client(fake_kube: FakeKube):  # -> kubernetes.client.ApiClient
    from kubernetes import client

    cfg = client.Configuration(host=fake_kube.base_url)  # type: ignore[attr-defined]
    cfg.retries = 0  # urllib3 retries would hide the injected 500s from the code under test
    api = client.ApiClient(cfg)
    yield api
    api.close()
