"""`--previous RECORD`: what changed since the last run record (seed 002's co-design hook).

Why: "A target change requires a new acceptance check, a drafter change requires a new KV
budget, and a change to both requires the whole two-model plan." Only a record of the last
decision can tell that something changed, so the gate reads it (through gate.inputs.loading: one
line and exit 3 on a bad file) and compares the revisions:

- target revision changed → acceptance evidence must be newer than the previous record (its
  `generated_at`), else the co-design line is inconclusive ("target changed: a new acceptance
  check is needed");
- drafter revision (or drafter artifact) changed → the KV budget is recomputed from the current
  configs (it always is; the line says so, so nobody reads the old bill as still valid).

Fail closed (issue 21, item 5): a record is only a previous record *of this plan* — its `plan` is
the plan's name and its `model_artifact` the plan's `target.name` (unknown on either side is not
"the same": refused, exit 3), so another plan's record with the same revision strings can never
say "no change". Where the plan states a revision, a record whose revision is null is refused
(it cannot show the change the comparison is for). A record whose engine ran under another acceptance
definition than the plan's version (`executed_engine_version` against `engine.version`,
`gate.model.invariants.definition_change`, issue 37 item 3) measured another quantity: refused, naming
both definitions, unless both convert exactly to specgate's L. `generated_at` must be a plausible date
(`gate.model.plausibility.evidence_time`: not before 2024, not in the future). A plan without a
revision cannot show a change: the comparison says "unknown".

"Newer" is decided by a time measured inside the evidence (`newer_windows`): a window's end as the
exporter, a live scrape or Prometheus measured it, or — for capture files, whose window times are
the files' mtimes (a checkout or `touch` renews them) — only the engine's own
`process_start_time_seconds` on the page: an engine started after the previous record runs what
was deployed since. A capture without it is never newer evidence.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.evidence.base import AcceptanceWindow
from gate.inputs.loading import CONFIG_LIMITS, InputError, load_json
from gate.model import plausibility as pl
from gate.model.invariants import IDENTITY, MEMBER_TIME, PLAN_SIDE, definition_change, reason
from gate.plan.model import Plan


@dataclass(frozen=True)
class PreviousRecord:
    """The fields of a previous run record that the comparison reads."""

    path: str
    plan: str | None
    model_revision: str | None
    drafter_revision: str | None
    decision: str | None
    generated_at: float | None  # seconds since the epoch
    model_artifact: str | None = None
    drafter_artifact: str | None = None
    model_config_sha256: str | None = None  # the configs' content then (compared by the co-design line)
    drafter_config_sha256: str | None = None
    executed_engine_version: str | None = None  # the engine version it ran then: its acceptance definition


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
            return pl.instant(value)  # a naive time is no instant: its zone is unknown
        except ValueError:
            return None
    return None


def load_previous(path: str | Path, plan: Plan | None = None, now: float | None = None) -> PreviousRecord:
    """Read a run record written by `specgate check --record` (or the run_record of --format json).

    Refused (InputError, exit 3): not a record, a `generated_at` that is no plausible date, and — with
    `plan` — a record of another plan or model, or one without the revision the plan compares (`check_for`).
    """
    doc = load_json(path, "previous run record", CONFIG_LIMITS)
    if isinstance(doc, dict) and isinstance(doc.get("run_record"), dict):
        doc = doc["run_record"]  # a whole `check --format json` document
    if not isinstance(doc, dict):
        raise InputError(f"previous run record {path} is not a JSON object")
    if "model_revision" not in doc and "model_artifact" not in doc:
        raise InputError(f"previous run record {path} has no model_revision / model_artifact: not a run record")
    raw = doc.get("generated_at")
    generated = _time(raw)
    if generated is None:
        raise InputError(reason(MEMBER_TIME, f"previous run record {path}: generated_at {raw!r} is not a time "
                                "(an ISO 8601 date with its zone, as `check --record` writes)"))
    bad = pl.evidence_time(generated, time.time() if now is None else now, f"previous run record {path} generated_at")
    if bad is not None:
        raise InputError(reason(MEMBER_TIME, bad.reason))
    prev = PreviousRecord(path=str(path), plan=_str(doc, "plan"), model_revision=_str(doc, "model_revision"),
                          drafter_revision=_str(doc, "drafter_revision"), decision=_str(doc, "decision"),
                          generated_at=generated, model_artifact=_str(doc, "model_artifact"),
                          drafter_artifact=_str(doc, "drafter_artifact"),
                          model_config_sha256=_str(doc, "model_config_sha256"),
                          drafter_config_sha256=_str(doc, "drafter_config_sha256"),
                          executed_engine_version=_str(doc, "executed_engine_version"))
    if plan is not None:
        check_for(prev, plan)
    return prev


def check_for(previous: PreviousRecord, plan: Plan) -> None:
    """InputError unless `previous` is a record of this plan and this target model, with the revisions the
    plan compares (unknown on either side is not "the same": the identity invariant, gate.model.invariants)."""
    where = f"previous run record {previous.path}"

    def refuse(detail: str) -> InputError:
        return InputError(reason(IDENTITY, f"{where}{detail}"))

    if previous.plan is None or previous.plan != plan.name:
        raise refuse(f" is a record of plan {previous.plan!r}, not of {plan.name!r}: give the last record of this plan")
    model = plan.target.name
    if previous.model_artifact is None or model is None:
        raise refuse(f": the target model is unknown (record model_artifact {previous.model_artifact!r}, plan "
                     f"target.name {model!r}): a record of another model cannot be ruled out")
    if previous.model_artifact != model:
        raise refuse(f" is a record of model {previous.model_artifact!r}, this plan's target is {model!r}: not a "
                     "previous run of this plan")
    if plan.target.revision is not None and previous.model_revision is None:
        raise refuse(f": model_revision is null, so a change of the target revision ({plan.target.revision}) "
                     "cannot be shown")
    drafter = plan.drafter
    if (drafter is not None and drafter.revision is not None and previous.drafter_artifact is not None
            and previous.drafter_revision is None):
        raise refuse(f": drafter_revision is null, so a change of the drafter revision ({drafter.revision}) "
                     "cannot be shown")
    changed = definition_change(plan.engine.kind, (where, previous.executed_engine_version),
                                (PLAN_SIDE, plan.engine.version))
    if changed is not None:
        raise InputError(f"{changed}; give a previous record of this acceptance definition, or none")


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


def against(previous: PreviousRecord, plan: Plan) -> RevisionChanges:
    """What changed since `previous` for this plan (InputError when it is not this plan's record, `check_for`).

    Another drafter artifact is a drafter change whatever its revision string says.
    """
    check_for(previous, plan)
    drafter = plan.drafter
    changes = compare(previous, plan.target.revision, drafter.revision if drafter else None)
    if (drafter is not None and drafter.name and previous.drafter_artifact is not None
            and previous.drafter_artifact != drafter.name and not changes.drafter_changed):
        changes = RevisionChanges(previous, changes.target_changed, True, changes.target_revisions,
                                  (f"{previous.drafter_artifact}@{previous.drafter_revision}",
                                   f"{drafter.name}@{drafter.revision}"))
    return changes


def is_newer(w: AcceptanceWindow, since: float) -> bool:
    """A window measured after `since`, by a time measured inside the evidence (module docstring).

    Only a window known not to span a restart counts. A capture file's window times are its mtimes,
    so there only the engine's start on the page (`process_start`) can show the window is newer.
    """
    if w.reset is not False:
        return False
    if w.file_time:
        return w.process_start is not None and w.process_start > since
    return w.end is not None and w.end > since


def newer_windows(previous: PreviousRecord, windows: Iterable[AcceptanceWindow]) -> list[AcceptanceWindow]:
    """The acceptance windows newer than the previous record (none when its time is unknown)."""
    since = previous.generated_at
    if since is None:
        return []
    return [w for w in windows if is_newer(w, since)]
