"""`specgate tune --emit <engine>`: the best depth per concurrency band as a schedule the engine runs.

The bands and their predicted speedups are floor 0 (gate.model.speedup.bands: the best k per measured
concurrency, k = 0 past the crossover, neighbours with the same k one band); each engine's profile spells them
(its `write_schedule`, gate.model.engines.<engine>/schedule.py: vLLM's `--speculative-config` fragment, SGLang's
adaptive tiers, TensorRT-LLM's `draft_len_schedule`), round-tripped through the engine's own reading before it
is printed. The engines offered are `gate.model.engines.SCHEDULE_WRITERS`. Where nothing pays anywhere the
schedule is k = 0 at every batch (said in a note; the depth declared beside it is then the deepest k measured,
and an engine that cannot say k = 0 everywhere refuses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gate.model.engines import profile
from gate.model.engines.base import ScheduleWriter
from gate.model.invariants import APPLICABILITY, emit_method, reason
from gate.model.speedup.bands import Emitted, batch_bands
from gate.model.speedup.context import ContextSweep
from gate.model.speedup.curves import TuneInputError
from gate.model.speedup.predict import TuneResult


def emit(result: TuneResult, engine: str, *, point: str | None = None,
         speculative_configs: Sequence[Mapping[str, Any]] = (),
         evidence: Sequence[tuple[str | None, str | None]] = ()) -> Emitted:
    """The schedule for `engine` (one of SCHEDULE_WRITERS; TuneInputError, one line, where the predictions cannot
    give one). `speculative_configs`: the speculative arm's settings from its probe records (what the writer may
    merge its schedule over); `evidence`: each speculative record's (engine, method), held to `applicable`."""
    writer = profile(engine)
    if not isinstance(writer, ScheduleWriter):
        raise TuneInputError(f"--emit: {writer.name} runs no depth schedule")
    refused = applicable(writer, writer.kind, writer.name, evidence)
    if refused is not None:
        raise TuneInputError(f"--emit {engine}: {refused}")
    chosen, bands = batch_bands(result, point)
    largest = max(b.k for b in bands)
    off: list[str] = []
    if largest == 0:
        # Nothing pays anywhere: the schedule the measurements give is k = 0 at every batch. vLLM needs a
        # num_speculative_tokens > 0 beside it: the deepest k measured.
        largest = max((p.k for p in result.points if p.point == chosen and p.speedup is not None), default=1)
        off.append("speculation is predicted to pay at no measured concurrency (best predicted speedup <= 1 "
                   "everywhere): this schedule sets k = 0 at every batch; running without speculation is simpler")
    fragment, schedule, bands, notes = writer.write_schedule(bands, largest, result, chosen, speculative_configs)
    top = max((c for b in bands for c in b.concurrencies), default=None)
    if top is not None and bands[-1].k > 0:
        off.append(f"batches above concurrency {top} (the largest measured) run k = {bands[-1].k} too: not measured "
                   "there (probe higher concurrencies to know)")
    notes = off + notes
    for b in bands:  # the engine reads back what the bands say (exporter.schedule is its reading)
        for batch in {b.start, b.end or b.start}:
            assert schedule.k_at(batch) == b.k, (engine, b, schedule)
    return Emitted(engine, chosen, fragment, tuple(bands), schedule, tuple(notes))


def applicable(writer: ScheduleWriter, kind: str, name: str, evidence: Sequence[tuple[str | None, str | None]]) -> str | None:
    """The records were taken on the engine `kind` the schedule is for, with a method it runs with a schedule (read
    from its profile, after its own alias resolution: SGLang's NEXTN is EAGLE); else the applicability reason.
    Why: a schedule from another engine's or method's curve predicts nothing for this one (issue 34)."""
    for rec_engine, _ in evidence:
        if rec_engine != kind:
            return reason(APPLICABILITY, f"the records were measured on {rec_engine or 'an unnamed engine'}: their "
                          f"curve is not {name}'s evidence")
    methods = [None if m is None else writer.schedule_method(m) for _, m in evidence]
    return emit_method(name, methods, writer.schedule_methods)


# Issue 39: no engine this project writes for takes a depth schedule by context length. vLLM 0.32 has
# `num_speculative_tokens_per_batch_size` only; `num_speculative_tokens_per_seq_len` (RFC #48627, PRs #48944 /
# #54801) is proposed, not merged — and #48944's own data has a context split 4.0 % worse than one k.
CONTEXT_SPLIT = ("{engine} takes no depth schedule by context length (vLLM 0.32 has only "
                 "num_speculative_tokens_per_batch_size; the proposed num_speculative_tokens_per_seq_len is not "
                 "merged): the fragment is the batch schedule of one context (--point); the depth per context is "
                 "advice, below, not in the fragment")


def context_advice(sweep: ContextSweep, engine: str) -> str:
    """What `tune --emit` says beside the fragment when the probes swept context: why the fragment has no context
    split, then the measured best k per context band and where it stops paying."""
    return "\n".join([f"note: {CONTEXT_SPLIT.format(engine=engine)}", *(a.text() for a in sweep.advice)]) + "\n"
