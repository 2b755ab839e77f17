"""Leader election on one coordination.k8s.io/v1 Lease: hold it by renewing before it expires.

Whoever holds an unexpired Lease leads; others wait. Writes carry the Lease's resourceVersion, so
two candidates racing for an expired Lease cannot both win (the loser gets 409). Expiry is counted on
this replica's clock from when it last *saw* the record change (as client-go does; the API reference:
"measured against the time of last observed renewTime"), never from the holder's clock, so clock skew
between nodes cannot hand a live leader's Lease to a second replica. Any failure to confirm leadership
means: do not act.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from gate.kube.api import KubeApi, NotFound


def micro_time(ts: float) -> str:
    """metav1.MicroTime as the API server writes it."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseElector:
    """One replica's view of the Lease; `try_acquire_or_renew()` before every round of work."""

    def __init__(self, api: KubeApi, name: str, identity: str, duration_s: int,
                 clock: Callable[[], float] = time.time) -> None:
        self.api = api
        self.name = name
        self.identity = identity
        self.duration_s = duration_s
        self.clock = clock
        self._observed: tuple[Any, Any] | None = None  # (holderIdentity, renewTime) last seen
        self._observed_at = 0.0  # our clock when it was first seen

    def try_acquire_or_renew(self) -> bool:
        now = self.clock()
        try:
            lease = self.api.read_lease(self.name)
        except NotFound:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.api.namespace},
                    "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": self.duration_s,
                             "acquireTime": micro_time(now), "renewTime": micro_time(now), "leaseTransitions": 0}}
            try:
                self.api.create_lease(body)
                return True
            except Exception:
                return False  # someone else created it first (409), or the API is failing
        except Exception:
            return False  # cannot confirm leadership: do not act
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        duration = spec.get("leaseDurationSeconds") or self.duration_s
        record = (holder, spec.get("renewTime"))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        if holder and holder != self.identity and self._observed_at + duration > now:
            return False
        if holder != self.identity:
            spec["acquireTime"] = micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec.update(holderIdentity=self.identity, renewTime=micro_time(now), leaseDurationSeconds=self.duration_s)
        lease["spec"] = spec
        try:
            self.api.replace_lease(self.name, lease)
            return True
        except Exception:
            return False  # 409: another candidate renewed or took it first
