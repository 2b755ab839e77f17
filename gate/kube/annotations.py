"""The annotation protocol between people and the controller, and the decision it records.

- `specgate.io/drafter-request` (set by people): names the drafter plan wanted.
- `specgate.io/drafter-active` (set by the controller): the request that runs now.
- `specgate.io/last-decision` (set by the controller): JSON of the last `DecisionRecord`.

Why a type: the controller reads its own last decision back (to back off instead of flapping),
so what it writes and what it reads are one dataclass that round-trips through the annotation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

GATE_LABEL = "specgate.io/gate=true"
REQUEST = "specgate.io/drafter-request"
ACTIVE = "specgate.io/drafter-active"
LAST = "specgate.io/last-decision"
PLAN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")


def format_time(ts: float) -> str:
    """RFC 3339 in whole seconds, as the annotation and Events carry it."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> float | None:
    """RFC 3339 (`Z` or an offset) to a timestamp; None when absent or not a time."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class DecisionRecord:
    """One judged request: what the annotation and the Event say."""

    plan: str
    digest: str
    phase: str
    decision: str  # pass | fail | inconclusive | invalid | removed
    reasons: list[str] = field(default_factory=list)
    at: float = 0.0
    by: str = ""

    def to_annotation(self) -> str:
        return json.dumps({"plan": self.plan, "digest": self.digest, "phase": self.phase,
                           "decision": self.decision, "reasons": self.reasons,
                           "at": format_time(self.at), "by": self.by}, separators=(",", ":"))

    @classmethod
    def from_annotation(cls, text: str | None) -> DecisionRecord | None:
        """The record an annotation holds; None when there is none or it is not a JSON object.

        A field missing or of the wrong type (a hand-edited annotation) reads as empty, so it can
        never match a request and never holds a backoff.
        """
        try:
            data: Any = json.loads(text or "null")
        except json.JSONDecodeError:
            return None
        if not isinstance(data, dict):
            return None

        def text_of(key: str) -> str:
            v = data.get(key)
            return v if isinstance(v, str) else ""

        reasons = data.get("reasons")
        return cls(plan=text_of("plan"), digest=text_of("digest"), phase=text_of("phase"),
                   decision=text_of("decision"),
                   reasons=[r for r in reasons if isinstance(r, str)] if isinstance(reasons, list) else [],
                   at=parse_time(text_of("at")) or 0.0, by=text_of("by"))

    def holds_backoff(self, now: float, backoff_s: float) -> bool:
        """Decided recently enough that the same request is not judged again yet."""
        return self.at + backoff_s > now
