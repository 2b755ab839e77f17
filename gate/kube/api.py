"""The few Kubernetes API calls the controller makes, as plain JSON, each retried on transient errors.

Why a wrapper over the real `kubernetes` client: every call needs the same three things — a
client-side timeout (the server's `timeoutSeconds` does not help against a silent connection),
retries with exponential backoff on 5xx, 429 and connection errors, and the answers the
controller acts on as typed errors: `Conflict` (409: someone wrote in between — read again and
decide again) and `NotFound` (404). Everything else propagates as the client raised it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # pragma: no cover
    from kubernetes.client import ApiClient

log = logging.getLogger(__name__)

Json = dict[str, Any]


class ApiError(Exception):
    """An API answer the controller handles by kind; `status` is the HTTP status."""

    def __init__(self, what: str, status: int, cause: BaseException) -> None:
        super().__init__(f"{what}: HTTP {status}: {getattr(cause, 'reason', '') or cause}")
        self.status = status


class Conflict(ApiError):
    """409: the object changed since it was read (resourceVersion mismatch) or already exists."""


class NotFound(ApiError):
    """404: no such object."""


def status_of(e: BaseException) -> int | None:
    from kubernetes.client.exceptions import ApiException

    return e.status if isinstance(e, ApiException) else None


def transient(e: BaseException) -> bool:
    """Worth retrying: 5xx, 429, or no HTTP answer at all."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    if isinstance(e, ApiException):
        return e.status == 429 or (e.status or 0) >= 500
    return isinstance(e, HTTPError | ConnectionError | TimeoutError)


def typed(what: str, e: BaseException) -> BaseException:
    """409 → Conflict, 404 → NotFound; anything else unchanged."""
    status = status_of(e)
    if status == 409:
        return Conflict(what, status, e)
    if status == 404:
        return NotFound(what, status, e)
    return e


class KubeApi:
    """Deployments, Events and Leases in one namespace, with timeouts, retries and typed errors."""

    def __init__(self, api_client: ApiClient, namespace: str, *, retries: int = 4, backoff_s: float = 0.5,
                 timeout_s: float = 30.0, sleep: Callable[[float], None] = time.sleep) -> None:
        from kubernetes import client

        self.apps = client.AppsV1Api(api_client)
        self.core = client.CoreV1Api(api_client)
        self.coord = client.CoordinationV1Api(api_client)
        self.namespace = namespace
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.sleep = sleep

    def retry(self, what: str, call: Callable[[], Any]) -> Json:
        """`call()` until it answers or fails for good; the body as JSON (`_preload_content=False`)."""
        delay = self.backoff_s
        for attempt in range(1, self.retries + 1):
            try:
                resp = call()
                data: Json = json.loads(resp.data) if hasattr(resp, "data") else resp
                return data
            except Exception as e:
                if not transient(e) or attempt == self.retries:
                    raise typed(what, e) from e
                log.warning("%s failed (%s); retry %d/%d in %g s", what, status_of(e) or type(e).__name__,
                            attempt, self.retries - 1, delay)
                self.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover

    def list_deployments(self, label_selector: str, name: str | None = None) -> Json:
        fields = f"metadata.name={name}" if name else None
        return self.retry("list deployments", lambda: self.apps.list_namespaced_deployment(
            self.namespace, label_selector=label_selector, field_selector=fields, _preload_content=False,
            _request_timeout=self.timeout_s))

    def get_deployment(self, name: str) -> Json:
        return self.retry(f"get deployment {name}", lambda: self.apps.read_namespaced_deployment(
            name, self.namespace, _preload_content=False, _request_timeout=self.timeout_s))

    def patch_deployment(self, name: str, body: Json) -> Json:
        """A strategic-merge patch; the body carries `metadata.resourceVersion`, so a stale one is Conflict."""
        return self.retry(f"patch deployment {name}", lambda: self.apps.patch_namespaced_deployment(
            name, self.namespace, body, _content_type="application/strategic-merge-patch+json",
            _preload_content=False, _request_timeout=self.timeout_s))

    def create_event(self, body: Json) -> Json:
        return self.retry("create event", lambda: self.core.create_namespaced_event(
            self.namespace, cast(Any, body), _preload_content=False, _request_timeout=self.timeout_s))

    def read_lease(self, name: str) -> Json:
        """One try (leader election must not wait out retries); NotFound when there is none yet."""
        try:
            resp: Any = self.coord.read_namespaced_lease(name, self.namespace, _preload_content=False,
                                                         _request_timeout=self.timeout_s)
        except Exception as e:
            raise typed(f"read lease {name}", e) from e
        data: Json = json.loads(resp.data)
        return data

    def create_lease(self, body: Json) -> None:
        try:
            self.coord.create_namespaced_lease(self.namespace, cast(Any, body), _preload_content=False,
                                               _request_timeout=self.timeout_s)
        except Exception as e:
            raise typed("create lease", e) from e

    def replace_lease(self, name: str, body: Json) -> None:
        try:
            self.coord.replace_namespaced_lease(name, self.namespace, cast(Any, body), _preload_content=False,
                                                _request_timeout=self.timeout_s)
        except Exception as e:
            raise typed(f"replace lease {name}", e) from e
