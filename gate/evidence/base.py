"""What every acceptance-evidence source gives the gate, and how it says it has nothing.

Why one protocol: capture files, a live engine, the exporter sidecar and Prometheus answer the
same question — which per-window acceptance lengths were seen, plus side facts (allocated pool,
context cap, engine version, cold start) — so the acceptance, kv_pool and staging lines read one
`MetricsEvidence` whatever the backend. A source that cannot answer raises a typed error
(`Unreachable`: no answer at all; `BadAnswer`: an answer that is not one; `NoData`: an answer with
nothing in it); `gather` turns it into an evidence error, so the line turns inconclusive, never
pass. Backends: `captures`, `engine`, `sidecar`, `prometheus`; `metrics` routes a `--metrics`
argument or a plan URL to one of them.

A fleet's per-pod table and a canary/stable comparison's samples ride on `MetricsEvidence` as the
protocols below (`FleetFacts`, `CohortFacts`): this module names no backend, so no backend's import
can close a cycle through it. The Prometheus backend's types (gate.evidence.fleet.table,
gate.evidence.fleet.cohorts) satisfy them; the checks judge them (sources return facts, never
verdicts).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gate.model.identity import EvidenceIdentity

if TYPE_CHECKING:
    from gate.evidence.positions import PositionEvidence
    from gate.evidence.probes import ProbeEvidence

Progress = Callable[[str], None]


class EvidenceError(Exception):
    """A source gave no evidence; the message is one line naming the source (credentials redacted)."""


class Unreachable(EvidenceError):
    """No answer at all: connection refused, timeout, TLS failure."""


class BadAnswer(EvidenceError):
    """An answer that is not one: an HTTP error status, a body that is not the expected document."""


class NoData(EvidenceError):
    """A well-formed answer with nothing in it: no series, no completed windows, no spec counters."""


def connection_refused(exc: BaseException) -> bool:
    """True when a `ConnectionRefusedError` is anywhere in the exception's chain (requests wraps it in
    urllib3's MaxRetryError → NewConnectionError), so a refused port is told apart by type, not by text."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ConnectionRefusedError):
            return True
        reason = getattr(e, "reason", None)
        nexts = [reason, e.__cause__, e.__context__, *e.args]
        todo += [n for n in nexts if isinstance(n, BaseException)]
    return False


def no_answer_kind(exc: BaseException) -> str:
    """How a request failed, for a reason: `connection refused`, else the exception's type name."""
    return "connection refused" if connection_refused(exc) else type(exc).__name__


@dataclass(frozen=True)
class AcceptanceWindow:
    """One window of one stream, as evidence for the per-window SLO.

    `reset`: True when the engine restarted inside the window, False when it did not, None when
    nobody can tell (Prometheus without the restarts series; engine pages without
    `process_start_time_seconds` and no counter that fell) — None is never read as "no restart".
    """

    source: str
    stream: str
    point: str | None
    start: float | None
    end: float | None
    reset: bool | None
    drafts: float | None
    acceptance_length: float | None
    acceptance_rate: float | None = None
    # Capture files: start/end are the files' mtimes, not times measured inside the evidence (a checkout or
    # `touch` renews them); `process_start` is the engine's own process_start_time_seconds on the page.
    file_time: bool = False
    process_start: float | None = None
    # Numbers someone reported, rebuilt as pages (a `# specgate: reported: SOURCE` line in a capture file,
    # gate.evidence.captures.REPORTED_MARK): the source in words. Reported stays reported wherever the
    # window's L is shown (`basis`), never "measured" nor "observed".
    reported: str | None = None

    @property
    def basis(self) -> str:
        """How this window's L came to the gate, in the words every reason uses: reported (with its source),
        measured from capture files, or observed live."""
        if self.reported is not None:
            return f"reported ({self.reported})"
        if self.file_time or self.source.startswith(("captures", "file ")):
            return "measured from capture files"
        return "observed live"

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class FleetRowFacts(Protocol):
    """One row of a fleet's per-pod table, as the acceptance line judges it (gate.checks.acceptance.fleet_rule).

    `windows` evidence windows, `met` of them at L ≥ target; `excluded` windows by why (its `non_finite`
    count keeps a row from passing); `not_evidence` why the row is not this plan's evidence, in the order
    found; `implausible` why its acceptance is impossible (None: possible); `restarts_unknown`: drafts
    windows without a restarts series; `to_json` the table's columns."""

    @property
    def pod(self) -> str: ...
    @property
    def windows(self) -> int: ...
    @property
    def met(self) -> int: ...
    @property
    def engine_up(self) -> bool | None: ...
    @property
    def excluded(self) -> Mapping[str, int]: ...
    @property
    def not_evidence(self) -> Sequence[str]: ...
    @property
    def implausible(self) -> str | None: ...
    @property
    def restarts_unknown(self) -> bool: ...
    def to_json(self) -> dict[str, Any]: ...


class FleetFacts(Protocol):
    """A fleet's per-pod table (gate.evidence.fleet.table.FleetResult): what was asked, every row, and
    `not_recent` (why its last window is not recent evidence; None when it is)."""

    @property
    def source(self) -> str: ...
    @property
    def selector(self) -> str: ...
    @property
    def window_seconds(self) -> int: ...
    @property
    def lookback_seconds(self) -> int: ...
    @property
    def end(self) -> float: ...
    @property
    def queries(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    @property
    def rows(self) -> Sequence[FleetRowFacts]: ...
    @property
    def not_recent(self) -> str | None: ...
    @property
    def path(self) -> str: ...  # "recorded" (per-pod window facts) or "raw" (range queries)
    @property
    def path_reason(self) -> str | None: ...
    def pooled_length(self) -> float | None:
        """Drafts-weighted L over every row's evidence windows."""
        ...


class CohortSampleFacts(Protocol):
    """One cohort's windows by pod (gate.evidence.fleet.cohorts.CohortSamples): each speed and the load, every
    pod seen, its pooled L."""

    @property
    def name(self) -> str: ...
    @property
    def selector(self) -> str: ...
    @property
    def pods(self) -> Sequence[str]: ...
    @property
    def tpot_seconds(self) -> Mapping[str, Sequence[float]]: ...
    @property
    def tokens_per_second(self) -> Mapping[str, Sequence[float]]: ...
    @property
    def running(self) -> Mapping[str, Sequence[float]]: ...
    @property
    def acceptance_length(self) -> float | None: ...


class CohortFacts(Protocol):
    """Canary and stable over one window (gate.evidence.fleet.cohorts.CohortEvidence), or the errors that stopped
    a cohort from being read; `cohorts` by name ("canary", "stable")."""

    @property
    def window_label(self) -> str: ...
    @property
    def lookback_seconds(self) -> int: ...
    @property
    def cohorts(self) -> Mapping[str, CohortSampleFacts]: ...
    @property
    def errors(self) -> Sequence[str]: ...
    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class PoolObservation:
    """An allocated pool an engine reported; `speculating` False when its page shows no speculative
    counters at all (its pool holds no drafter KV, so it is not the pool with the drafter)."""

    tokens: int
    source: str
    speculating: bool | None = None


def _pool_rank(p: PoolObservation) -> tuple[bool, int]:
    """A pool seen while speculating beats one seen without; then the smallest."""
    return (p.speculating is False, p.tokens)


@dataclass
class MetricsEvidence:
    """Everything the metrics sources said: windows, errors, and side facts for other lines."""

    windows: list[AcceptanceWindow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    kv_pool: PoolObservation | None = None
    context_cap_tokens: int | None = None
    engine_version: str | None = None
    # A fleet's engine version per pod (specgate_engine_info{version}): pods on two acceptance definitions are
    # not one quantity (gate.checks.acceptance.window_slo, issue 37 item 3). Empty: no versions seen.
    engine_versions: dict[str, str] = field(default_factory=dict)
    ready_seconds: float | None = None
    ready_source: str | None = None
    # Per source, read by gate.evidence.vetting before merging: what the source says it is, whether it
    # is live (not a file), and whether its engine is up (the sidecar's engine_up; None: not said).
    identity: EvidenceIdentity | None = None
    live: bool = False
    engine_up: bool | None = None
    # A Prometheus source's per-pod table (gate.evidence.fleet): each pod's windows, restarts and engine state as
    # facts, judged pod by pod by gate.checks.acceptance.fleet_rule, so its windows are not in `windows`.
    fleet: FleetFacts | None = None
    # A Prometheus source's canary and stable cohorts over the same window (gate.evidence.fleet.cohorts), when the
    # plan names both; judged in --phase post by gate.checks.acceptance.cohorts.
    cohorts: CohortFacts | None = None
    # The plan's capture groups' per-position counters (gate.evidence.positions), from the same pages as their
    # windows: the acceptance line's depth advice (gate.model.speedup.advice) reads these, never the files.
    positions: list[PositionEvidence] = field(default_factory=list)
    # The plan's probe records (evidence.probes), read once by gather (gate.evidence.probes); None: it names none.
    probes: ProbeEvidence | None = None

    def merge(self, other: MetricsEvidence) -> None:
        self.windows += other.windows
        self.errors += other.errors
        self.sources += other.sources
        if other.kv_pool is not None and (self.kv_pool is None or _pool_rank(other.kv_pool) < _pool_rank(self.kv_pool)):
            self.kv_pool = other.kv_pool
        self.context_cap_tokens = self.context_cap_tokens or other.context_cap_tokens
        self.engine_version = self.engine_version or other.engine_version
        self.engine_versions = {**other.engine_versions, **self.engine_versions}
        self.fleet = self.fleet or other.fleet
        self.cohorts = self.cohorts or other.cohorts
        self.positions += other.positions
        self.probes = self.probes or other.probes
        if other.ready_seconds is not None and (self.ready_seconds is None or other.ready_seconds > self.ready_seconds):
            self.ready_seconds, self.ready_source = other.ready_seconds, other.ready_source


@dataclass(frozen=True)
class EvidenceRequest:
    """What every source is asked: the plan's SLO window and thresholds, and whether it may wait.

    `wait=False` (the HTTP gate, the controller) never sleeps for a new window: history answers at once.
    """

    window_seconds: float
    min_windows: int
    min_drafts: float
    lookback_seconds: float
    wait: bool = True
    progress: Progress | None = None
    sleep: Callable[[float], None] = time.sleep


class EvidenceSource(Protocol):
    """One backend bound to its address; `name` is what reasons and the run record call it."""

    @property
    def name(self) -> str: ...

    def collect(self, request: EvidenceRequest) -> MetricsEvidence:
        """The source's windows and side facts; raises EvidenceError when it has none to give."""
        ...


def collect(source: EvidenceSource, request: EvidenceRequest) -> MetricsEvidence:
    """Ask one source; its EvidenceError becomes an evidence error (the line turns inconclusive)."""
    try:
        return source.collect(request)
    except EvidenceError as e:
        return MetricsEvidence(sources=[source.name], errors=[str(e)])


@dataclass(frozen=True)
class StartupObservation:
    """A measured cold start to the first ready request, and where it was measured."""

    seconds: float
    source: str
