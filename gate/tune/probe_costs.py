"""Probe records (`specgate probe`, gate/evidence/probes.py) as tune input: costs by k and concurrency.

Why the served rate and not TPOT: compare judges arms by served rate, so tune's per-sequence
times come from the same numbers and a measured k's predicted speedup is the measured ratio:

    t_step(B)     = 1000 * B * wall_seconds / output_tokens                 (baseline cells, ms)
    t_cycle(k, B) = 1000 * L * B * wall_seconds / output_tokens             (speculative cells at k)

(wall_seconds includes first-token waiting, as the probe's served rate does). A probe cell has
no per-position counters: its L is measured at its own k only (`measured`); per-position
counters come from --captures or a plan. The mix name is the operating point.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gate.evidence.intake import record_depth as vetted_depth
from gate.evidence.intake import record_method
from gate.evidence.probes import ProbeError, ProbeRecord, load_record
from gate.model.speedup.context import ContextSample
from gate.model.speedup.cost import CostSample
from gate.model.speedup.counters import PositionCounters
from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.tune import TuneInputs


def record_depth(rec: ProbeRecord, path: Path) -> int:
    """k of a speculative record: the one depth rule (`gate.evidence.probe_vetting.record_depth`, the engine's own
    spelling through `gate.model.depth`), the same k the gate's vetting reads from the record."""
    k, defect = vetted_depth(rec)
    if defect is not None:
        raise TuneInputError(f"{path}: {defect}")
    if k is None or k < 1:
        raise TuneInputError(f"{path}: a speculative probe record without its depth (num_speculative_tokens, or "
                             "SGLang's num_draft_tokens / num_steps) and engine: its depth is unknown")
    return k


def from_probe_records(paths: Sequence[Path]) -> TuneInputs:
    out = TuneInputs()
    records: list[tuple[Path, ProbeRecord]] = []
    for p in paths:
        try:
            records.append((p, load_record(p)))
        except ProbeError as e:
            raise TuneInputError(str(e)) from None
    if not any(r.arm == "baseline" for _, r in records):
        out.notes.append("no baseline probe record: no plain step, so no speedup from the probes")
    for path, rec in records:
        k = 0 if rec.arm == "baseline" else record_depth(rec, path)
        if rec.arm == "speculative" and rec.speculative:
            out.speculative_configs.append(dict(rec.speculative))
        if rec.arm == "speculative":
            out.speculative_evidence.append((rec.engine, record_method(rec)))
        src = f"probe {path.name}"
        lengths = {m.name: m.prompt_tokens for m in rec.workload}
        for c in rec.cells:
            if c.metrics_reset or c.failed_requests or c.output_tokens <= 0:
                out.notes.append(f"{src}: cell {c.mix} B={c.concurrency} rep {c.repetition} skipped "
                                 f"({'engine restarted' if c.metrics_reset else 'failed requests or no output'})")
                continue
            ctx = lengths.get(c.mix)
            if ctx is not None and c.request_rate is None and (k == 0 or c.acceptance_length is not None):
                out.context.append(ContextSample(
                    ctx, c.concurrency, k, c.served_tokens_per_second,
                    None if c.engine_step_seconds is None else 1000.0 * c.engine_step_seconds,
                    None if c.tpot_seconds.p50 is None else 1000.0 * c.tpot_seconds.p50, c.drafts, c.accepted_tokens))
            per_token_ms = 1000.0 * c.concurrency * c.wall_seconds / c.output_tokens
            if k == 0:
                out.costs.append(CostSample(c.mix, c.concurrency, 0, per_token_ms, src, measured=True))
                continue
            if c.acceptance_length is None:
                out.notes.append(f"{src}: cell {c.mix} B={c.concurrency} rep {c.repetition} has no acceptance "
                                 "length: no cycle time")
                continue
            out.costs.append(CostSample(c.mix, c.concurrency, k, c.acceptance_length * per_token_ms, src,
                                        measured=True))
            out.counters.append(PositionCounters(c.mix, k, c.drafts or 0.0, (), src,
                                                 acceptance_length=c.acceptance_length))
    return out
