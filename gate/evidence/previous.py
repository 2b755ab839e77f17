"""`--previous RECORD`: what changed since the last run record (seed 002's co-design hook).

Why: "A target change requires a new acceptance check, a drafter change requires a new KV
budget, and a change to both requires the whole two-model plan." Only a record of the last
decision can tell that something changed, so the gate reads it (through gate.inputs.loading: one
line and exit 3 on a bad file) and compares the revisions:

- target revision changed → acceptance evidence must be newer than the previous record (its
  `generated_at`), else the co-design line is inconclusive ("target changed: a new acceptance
  check is needed");
- drafter revision changed → the KV budget is recomputed from the current configs (it always
  is; the line says so, so nobody reads the old bill as still valid).

A record without revisions (null) cannot show a change: the comparison says "unknown".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gate.inputs.loading import CONFIG_LIMITS, InputError, load_json


@dataclass(frozen=True)
class PreviousRecord:
    """The fields of a previous run record that the comparison reads."""

    path: str
    plan: str | None
    model_revision: str | None
    drafter_revision: str | None
    decision: str | None
    generated_at: float | None  # seconds since the epoch


@dataclass(frozen=True)
class RevisionChanges:
    """What changed between the previous record and this plan (None: cannot tell)."""

    previous: PreviousRecord
    target_changed: bool | None
    drafter_changed: bool | None
    target_revisions: tuple[str | None, str | None]
    drafter_revisions: tuple[str | None, str | None]

    def to_json(self) -> dict[str, Any]:
        return {"previous_record": self.previous.path, "previous_generated_at": self.previous.generated_at,
                "target_changed": self.target_changed, "drafter_changed": self.drafter_changed,
                "target_revisions": list(self.target_revisions), "drafter_revisions": list(self.drafter_revisions)}


def _str(doc: dict[str, Any], key: str) -> str | None:
    v = doc.get(key)
    return v if isinstance(v, str) and v else None


def _time(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def load_previous(path: str | Path) -> PreviousRecord:
    """Read a run record written by `specgate check --record` (or the run_record of --format json)."""
    doc = load_json(path, "previous run record", CONFIG_LIMITS)
    if isinstance(doc, dict) and isinstance(doc.get("run_record"), dict):
        doc = doc["run_record"]  # a whole `check --format json` document
    if not isinstance(doc, dict):
        raise InputError(f"previous run record {path} is not a JSON object")
    if "model_revision" not in doc and "model_artifact" not in doc:
        raise InputError(f"previous run record {path} has no model_revision / model_artifact: not a run record")
    generated = _time(doc.get("generated_at"))
    if doc.get("generated_at") is not None and generated is None:
        raise InputError(f"previous run record {path}: generated_at {doc.get('generated_at')!r} is not a time")
    return PreviousRecord(path=str(path), plan=_str(doc, "plan"), model_revision=_str(doc, "model_revision"),
                          drafter_revision=_str(doc, "drafter_revision"), decision=_str(doc, "decision"),
                          generated_at=generated)


def _changed(old: str | None, new: str | None) -> bool | None:
    if old is None or new is None:
        return None
    return old != new


def compare(previous: PreviousRecord, target_revision: str | None, drafter_revision: str | None) -> RevisionChanges:
    """Revisions then and now; a change cannot be shown when either side is unknown."""
    return RevisionChanges(previous=previous,
                           target_changed=_changed(previous.model_revision, target_revision),
                           drafter_changed=_changed(previous.drafter_revision, drafter_revision),
                           target_revisions=(previous.model_revision, target_revision),
                           drafter_revisions=(previous.drafter_revision, drafter_revision))
