"""Acceptance evidence from capture files: `/metrics` pages saved in time order (or one windows JSON).

Why through `exporter`: the gate never re-derives what the exporter knows. Each page becomes an
`EngineSnapshot` via `exporter.scrape`, and each neighbouring pair one window per stream via
`exporter.derive.derive_window` (restart-aware: a window spanning a restart is `reset`). A file
that cannot be read is invalid input (PlanError, exit 3); pages without speculative counters are
an evidence error (the line turns inconclusive).

A capture file may say its numbers are reported, not measured: a comment line
`# specgate: reported: SOURCE` (Prometheus parsers skip it; examples/plans/make_seed004_captures.py
writes one for seed 004's counters rebuilt as pages). Every window from such a group carries SOURCE
(`AcceptanceWindow.reported`), so its L is shown as reported wherever it appears (`AcceptanceWindow.basis`).
The mark can only lower a label (reported is weaker than measured), so it is taken as written.

A group whose counters no engine can produce is no evidence (issue 34, plausibility; `read_group`): on each page,
per stream, accepted ≤ draft tokens, each position's accepted ≤ drafts, generated ≥ drafts + accepted (vLLM,
llama.cpp) or ≥ verify calls + finished requests (SGLang) (`gate.model.plausibility.capture_counters`); between
neighbouring pages of one process (the same known start time) no counter goes down (`counters_grew`); a value
the exporter's reader left out as impossible (`exporter.sanity`, an `impossible` anomaly) refuses the page. `check`
reads such a group as an evidence error (the line turns inconclusive), `tune --captures` as an input error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from exporter.derive import derive_window
from exporter.engines import ADAPTERS
from exporter.engines.base import EngineSnapshot
from exporter.scrape import ScrapeError, snapshot_from_text
from gate.evidence.base import AcceptanceWindow, EvidenceRequest, MetricsEvidence, PoolObservation
from gate.evidence.positions import PositionEvidence
from gate.evidence.sidecar import stream_name, windows_document
from gate.inputs.loading import WINDOWS_LIMITS, InputError, load_json, read_capture
from gate.model import plausibility as pl
from gate.model.identity import EvidenceIdentity
from gate.model.invariants import PLAUSIBILITY, reason
from gate.plan.model import PlanError

# The comment line that says a capture's numbers are reported (the rest of the line: where from).
REPORTED_MARK = "# specgate: reported:"
# A mark's source is shown in reasons: one line of printable text, this long at most.
MAX_REPORTED_SOURCE = 300


def reported_source(text: str) -> str | None:
    """The SOURCE of a `# specgate: reported: SOURCE` comment line in a capture's text (the first one), or
    None when the page does not say it is reported. Non-printable characters are dropped and the source cut
    to MAX_REPORTED_SOURCE characters; an empty source still marks the page ("source not given")."""
    for line in text.splitlines():
        if line.startswith(REPORTED_MARK):
            src = "".join(c for c in line[len(REPORTED_MARK):] if c.isprintable()).strip()
            return src[:MAX_REPORTED_SOURCE] or "source not given"
    return None


def pool_of(snap: EngineSnapshot, source: str) -> PoolObservation | None:
    """The smallest allocated pool on a page, and whether the page shows any speculation at all."""
    pools = [s.kv_pool_tokens for s in snap.streams if s.kv_pool_tokens is not None]
    speculating = any(s.spec is not None for s in snap.streams)
    return PoolObservation(min(pools), source, speculating) if pools else None


def identity_of(snap: EngineSnapshot, source: str) -> EvidenceIdentity:
    """What a page says about its deployment: engine, served model names, speculation on/off and depth.

    The depth is the engine's to read (its adapter's hooks, `exporter.engines.base.EngineAdapter`): the last
    stream whose counters show it (`counted_depth`: one per-position series per draft position, or SGLang's
    draft-token gauge by its k rule), else what the engine's reported settings say (`settings_depth`).
    """
    models = tuple(sorted({s.model for s in snap.streams if s.model}))
    specs = [s.spec for s in snap.streams if s.spec is not None]
    rules = ADAPTERS[snap.engine]
    depth: int | None = None
    for sp in specs:
        k = rules.counted_depth(sp)
        if k is not None:
            depth = k
    said = snap.speculative  # SGLang /server_info: the algorithm it runs, and k where the gauge does not say yet
    if depth is None:
        depth = rules.settings_depth(said)
    return EvidenceIdentity(source=source, engine=snap.engine, models=models, speculating=bool(specs),
                            depth=depth, algorithm=said.algorithm if said is not None else None,
                            version=snap.version)


def side_facts(snap: EngineSnapshot, ev: MetricsEvidence, pool_source: str) -> None:
    """Allocated pool, context cap, engine version and identity from the last page of a series."""
    ev.kv_pool = pool_of(snap, pool_source)
    caps = [s.context_cap_tokens for s in snap.streams if s.context_cap_tokens]
    ev.context_cap_tokens = min(caps) if caps else None
    ev.engine_version = snap.version
    ev.identity = identity_of(snap, ev.sources[0] if ev.sources else pool_source)


def windows_from_snapshots(snaps: Sequence[EngineSnapshot], source: str, point: str | None,
                           seconds: float | None, min_drafts: float, file_times: bool = False,
                           reported: str | None = None) -> list[AcceptanceWindow]:
    """One window per stream between each neighbouring pair of snapshots (exporter.derive).

    A window that shows no restart on pages without `process_start_time_seconds` has an unknown
    restart status (`reset` None): counters that only grew cannot rule a restart out. `file_times`:
    the pages' timestamps are capture files' mtimes (the windows say so; gate.evidence.previous).
    `reported`: the pages' numbers are reported (their source), not measured.
    """
    out: list[AcceptanceWindow] = []
    for before, after in zip(snaps, snaps[1:], strict=False):
        blind = before.process_start_time is None or after.process_start_time is None
        for w in derive_window(before, after, seconds=seconds, min_drafts=min_drafts):
            if not w.has_spec:
                continue
            reset: bool | None = True if w.reset else (None if blind else False)
            out.append(AcceptanceWindow(
                source=source, stream=stream_name(w.model, w.rank), point=point,
                start=before.timestamp, end=after.timestamp, reset=reset, drafts=w.drafts,
                acceptance_length=w.acceptance_length, acceptance_rate=w.acceptance_rate,
                file_time=file_times, process_start=after.process_start_time, reported=reported))
    return out


def read_page(path: str | Path) -> tuple[EngineSnapshot, str | None]:
    """One capture file as a snapshot, and its reported source (`reported_source`; None: not marked reported).

    The one capture reader of the gate (`check`'s evidence, `tune --captures`): read by
    `gate.inputs.loading.read_capture` (a FIFO or a device is refused at once, never waited on), parsed by
    `exporter.scrape`; the snapshot's timestamp is the file's mtime. InputError in one line.
    """
    text, mtime = read_capture(path)
    try:
        return snapshot_from_text(text, timestamp=mtime), reported_source(text)
    except ScrapeError as e:
        raise InputError(f"capture {path}: {e}") from None


class ImpossibleCounters(InputError):
    """A capture group whose counters no engine can produce (module docstring): one line, its invariant's message;
    `pages` are the group's pages as read (what they say of their deployment is still said)."""

    def __init__(self, message: str, pages: Sequence[EngineSnapshot] = ()) -> None:
        super().__init__(message)
        self.pages = tuple(pages)


def impossible_counters(snaps: Sequence[EngineSnapshot], names: Sequence[str]) -> str | None:
    """The first counter identity a group's pages break (module docstring), as one line; None: they hold."""
    pages = list(zip(snaps, names, strict=True))
    for snap, name in pages:
        left_out = snap.anomalies.get("impossible", 0)
        if left_out:
            return reason(PLAUSIBILITY, f"capture {name}: {left_out} value(s) no engine can report, left out by the "
                          "reader (exporter.sanity: more accepted than drafted tokens, a position accepted more often "
                          "than there were drafts, a depth above 64, a pool above its bound): not one engine's page")
        for st in snap.streams:
            sp = st.spec
            if sp is None:
                continue
            found = pl.capture_counters(
                generated=st.generation_tokens, drafts=sp.drafts, draft_tokens=sp.draft_tokens,
                accepted=sp.accepted_tokens, per_position=sp.accepted_per_position, verify_calls=sp.verify_calls,
                finished=st.finished_requests, where=f"capture {name}, {stream_name(st.model, st.rank)}")
            if found is not None:
                return reason(PLAUSIBILITY, found.reason)
    for (before, b_name), (after, a_name) in zip(pages, pages[1:], strict=False):
        if before.process_start_time is None or before.process_start_time != after.process_start_time:
            continue  # a changed start is a restart (exporter.derive.restarted); an unknown one cannot tell
        for st in after.streams:
            old = before.stream(st.model, st.rank)
            found = pl.counters_grew(old.cumulative, st.cumulative, where=f"captures {b_name} to {a_name}, "
                                     f"{stream_name(st.model, st.rank)}") if old is not None else None
            if found is not None:
                return reason(PLAUSIBILITY, found.reason)
    return None


def read_group(files: Sequence[Path]) -> tuple[list[EngineSnapshot], str | None]:
    """One capture group's pages and their reported source: one reported page makes the whole group reported (a
    window's L is a difference of two pages); None when no page is marked. Counters no engine can produce are
    ImpossibleCounters (`impossible_counters`)."""
    pages = [read_page(Path(f)) for f in files]
    marks = list(dict.fromkeys(src for _, src in pages if src is not None))
    snaps = [snap for snap, _ in pages]
    bad = impossible_counters(snaps, [Path(f).name for f in files])
    if bad is not None:
        raise ImpossibleCounters(bad, snaps)
    return snaps, "; ".join(marks) if marks else None


def counters_source(source: str, reported: str | None) -> str:
    """What per-position counters are shown under: the files, and "(reported: SOURCE)" when they are reported."""
    return source if reported is None else f"{source} (reported: {reported})"


def from_capture_files(files: Sequence[Path], point: str | None, seconds: float | None,
                       min_drafts: float, positions: bool = False, positions_point: str | None = None) -> MetricsEvidence:
    """Windows between consecutive capture files (or one exporter windows JSON document).

    `positions` (a plan capture group, named `positions_point` by `gate.evidence.positions.capture_point_name`)
    adds the group's per-position counters from the same pages (`MetricsEvidence.positions`): read once.
    """
    source = "captures " + ", ".join(Path(f).name for f in files)
    if len(files) == 1 and files[0].suffix == ".json":
        try:
            doc = load_json(files[0], "windows document", WINDOWS_LIMITS)
        except InputError as e:
            raise PlanError(str(e)) from None
        if not isinstance(doc, dict):
            raise PlanError(f"{files[0]}: not a windows document (a JSON object with 'windows')")
        ev = windows_document(doc, f"file {files[0]}", min_drafts)
        if positions:
            ev.positions.append(PositionEvidence.of([], positions_point, source))
        return ev
    try:
        snaps, reported = read_group(files)
    except ImpossibleCounters as e:
        ev = MetricsEvidence(sources=[source], errors=[f"{source}: {e}"])
        if e.pages:  # another deployment's pages are that too (vetting.vet_source names it), whatever their counters
            ev.identity = identity_of(e.pages[-1], source)
        if positions:
            ev.positions.append(PositionEvidence.of([], positions_point, source))
        return ev
    except InputError as e:
        raise PlanError(str(e)) from None
    ev = MetricsEvidence(sources=[source])
    if positions:
        ev.positions.append(PositionEvidence.of(snaps, positions_point, counters_source(source, reported)))
    if len(snaps) < 2:
        ev.errors.append(f"{source}: one capture is no window (give two or more, in time order)")
    else:
        ev.windows = windows_from_snapshots(snaps, source, point, seconds, min_drafts, file_times=True,
                                            reported=reported)
        if not ev.windows:
            ev.errors.append(f"{source}: no speculative-decoding counters in the captures")
    if snaps:
        side_facts(snaps[-1], ev, f"capture {Path(files[-1]).name}")
    return ev


@dataclass(frozen=True)
class CaptureFiles:
    """An EvidenceSource: capture files of one operating point (`seconds`: the time between pages)."""

    files: tuple[Path, ...]
    point: str | None = None
    seconds: float | None = None
    # A plan capture group gives its per-position counters too (gate.evidence.positions), under this point's name.
    positions: bool = False
    positions_point: str | None = None

    @property
    def name(self) -> str:
        return "captures " + ", ".join(f.name for f in self.files)

    def collect(self, request: EvidenceRequest) -> MetricsEvidence:
        seconds = self.seconds if self.seconds is not None else request.window_seconds
        return from_capture_files(list(self.files), self.point, seconds, request.min_drafts,
                                  self.positions, self.positions_point)
