"""The few Kubernetes API calls the controller makes, as plain JSON, each retried on transient errors.

Why a wrapper over the real `kubernetes` client: every call needs the same three things — a
client-side timeout (the server's `timeoutSeconds` does not help against a silent connection),
retries on 5xx, 429 and connection errors, and the answers the controller acts on as typed errors:
`Conflict` (409: someone wrote in between — read again and decide again) and `NotFound` (404).
Everything else propagates as the client raised it.

Retry waits use "full jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015): before retry
n (n = 1, 2, ...) the wait is

    sleep_n = uniform(0, min(cap_s, base_s * 2**(n - 1)))

so controller replicas that failed together (an API server restart) do not come back together. A 429 or
503 that carries `Retry-After` (delta-seconds or an HTTP-date, RFC 9110 §10.2.3) is obeyed instead: the wait
is exactly what the server asked for, never less; a server that asks for more than `retry_after_max_s` is
not waited on (the call fails now and the controller's next pass tries again) so one answer cannot park the
leader loop. The random source, the clock and the sleep are injected (tests seed them).
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
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


def retry_after_s(headers: Any, now: float) -> float | None:
    """The wait a `Retry-After` header asks for, in seconds (>= 0), or None when absent or unreadable.

    RFC 9110 §10.2.3: either delta-seconds (a non-negative integer) or an HTTP-date, whose wait is
    date - now (a date in the past asks for no wait)."""
    raw = headers.get("Retry-After") if headers is not None else None
    if raw is None:
        return None
    raw = str(raw).strip()
    if raw.isdigit():
        return float(raw)
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP-date is always GMT
        return None
    return max(0.0, when.timestamp() - now)


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
                 backoff_cap_s: float = 8.0, retry_after_max_s: float = 60.0, timeout_s: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        from kubernetes import client

        self.apps = client.AppsV1Api(api_client)
        self.core = client.CoreV1Api(api_client)
        self.coord = client.CoordinationV1Api(api_client)
        self.namespace = namespace
        self.retries = retries
        self.backoff_s = backoff_s
        self.backoff_cap_s = backoff_cap_s
        self.retry_after_max_s = retry_after_max_s
        self.timeout_s = timeout_s
        self.sleep = sleep
        self.rng = rng if rng is not None else random.Random()
        self.clock = clock

    def wait_before(self, retry: int, e: BaseException) -> float | None:
        """Seconds to wait before retry number `retry` (1-based) after `e`; None: do not retry.

        `Retry-After` on a 429/503 wins (what the server asked, never less); above `retry_after_max_s` the
        answer is None. Otherwise full jitter: uniform(0, min(cap_s, base_s * 2**(retry - 1)))."""
        status = status_of(e)
        if status in (429, 503):
            asked = retry_after_s(getattr(e, "headers", None), self.clock())
            if asked is not None:
                return asked if asked <= self.retry_after_max_s else None
        return self.rng.uniform(0.0, min(self.backoff_cap_s, self.backoff_s * 2 ** (retry - 1)))

    def retry(self, what: str, call: Callable[[], Any]) -> Json:
        """`call()` until it answers or fails for good; the body as JSON (`_preload_content=False`)."""
        for attempt in range(1, self.retries + 1):
            try:
                resp = call()
                data: Json = json.loads(resp.data) if hasattr(resp, "data") else resp
                return data
            except Exception as e:
                if not transient(e) or attempt == self.retries:
                    raise typed(what, e) from e
                delay = self.wait_before(attempt, e)
                if delay is None:
                    log.warning("%s failed (%s); its Retry-After is over %g s: not waiting", what, status_of(e),
                                self.retry_after_max_s)
                    raise typed(what, e) from e
                log.warning("%s failed (%s); retry %d/%d in %.3g s", what, status_of(e) or type(e).__name__,
                            attempt, self.retries - 1, delay)
                self.sleep(delay)
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
