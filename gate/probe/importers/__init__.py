"""Other benchmarks' results as probe records: `specgate probe import --from TOOL FILE...` (issue 23 item 5).

Why: users already run `vllm bench serve`, guidellm or AIPerf against their engines; those runs time
every request the way the probe does (client-side TTFT = first streamed chunk − send, TPOT =
(last chunk − first chunk) / (output tokens − 1), served rate = output tokens / benchmark wall clock),
so their per-request numbers can be evidence — once they are held to the same rules as a native record.

One module per tool reads one result file into one cell (`ImportedCell`): `vllm_bench` (the JSON of
`vllm bench serve --save-result --save-detailed`), `aiperf` (AIPerf's per-request
`profile_export.jsonl`); `guidellm` reads one report into one cell per benchmark it holds (a
`concurrent` profile over several stream counts is several cells). `build_record` turns the cells into
a `specgate.probe/1` record:

- every file is one cell; cells of one concurrency are numbered as repetitions in the order given; files of
  identical content are one measurement (refused, whatever their names), and every file's own date is a date of
  evidence, all within a day of each other (`gate.model.invariants`; a record dated only by its newest file
  let 2019 runs through);
- what the file cannot say (the engine's kind and version, the arm, the speculative config, the
  temperature the tool sent where its file does not record it) comes from the user's flags
  (`ImportSettings`) and is otherwise null: the identity rules of `gate.evidence.probe_vetting` then
  refuse to compare such a record, exactly as a native one with the same nulls;
- `source` names the tool, its version where the file records it, and the files;
- the record is vetted by `gate.evidence.intake.record_defects` before it is written (simulated acceptance in
  `--speculative-config` included: issue 37): a rate that
  is not tokens / wall, acceptance on a baseline, … is a ProbeError (one line, exit 3), as is a file
  whose own numbers are impossible (each importer's checks: a TTFT longer than its request, more
  chunks than tokens, totals that are not the sum of the requests, a request outside the benchmark's
  wall clock, non-finite or negative times).

Files are read through `gate.inputs.loading` (regular files only, size-limited, duplicate keys refused).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gate.evidence.intake import record_defects
from gate.evidence.probes import Cell, MixSpec, ProbeError, ProbeRecord
from gate.model.invariants import IDENTITY, member_times, reason, repeated
from gate.probe.importers.aiperf import read_aiperf
from gate.probe.importers.common import ImportedCell
from gate.probe.importers.guidellm import read_guidellm
from gate.probe.importers.vllm_bench import read_vllm_bench


@dataclass(frozen=True)
class ImportSettings:
    """What the user says about the run that its file does not record (module docstring)."""

    arm: str  # "baseline" | "speculative"
    engine: str | None = None  # "vllm" | "sglang"
    engine_version: str | None = None
    model: str | None = None  # None: the model name the file records
    speculative: dict[str, Any] | None = None
    temperature: float | None = None  # None: the file's own, where it records one
    concurrency: int | None = None  # for files that do not record it (AIPerf's per-request export)
    mix: str = "imported"
    tool_version: str | None = None  # where the file does not record the tool's version


Reader = Callable[[Path, ImportSettings], ImportedCell | list[ImportedCell]]  # a list: several cells in one file

# --from NAME -> the reader of one file of that tool
READERS: dict[str, Reader] = {
    "vllm-bench": lambda p, s: read_vllm_bench(p, concurrency=s.concurrency),
    "aiperf": lambda p, s: read_aiperf(p, concurrency=s.concurrency),
    "guidellm": lambda p, s: read_guidellm(p, concurrency=s.concurrency, temperature=s.temperature),
}


def _one(values: Sequence[Any], what: str, default: Any = None) -> Any:
    """The one value all cells agree on; several different ones are a ProbeError naming them."""
    got = sorted({v for v in values if v is not None}, key=str)
    if len(got) > 1:
        raise ProbeError(reason(IDENTITY, f"the imported files disagree on {what}: {', '.join(map(str, got))}; "
                                "import them separately"))
    return got[0] if got else default


def _measurement(c: ImportedCell) -> dict[str, Any]:
    """What one run measured, without when it says it ran or on which clock: a copy re-dated or shifted in time is
    still the same measurement."""
    out = asdict(c)
    out.pop("created_at")
    starts = [t.start for t in c.times if t.start is not None]
    origin = min(starts) if starts else 0.0
    out["times"] = [{**asdict(t), "start": None if t.start is None else t.start - origin} for t in c.times]
    return out


def build_record(tool: str, cells: Sequence[ImportedCell], settings: ImportSettings,
                 names: Sequence[str], members: Sequence[str] | None = None) -> ProbeRecord:
    """One probe record from one tool's cells (module docstring); vetted, else ProbeError with the first defect.
    `members`: each cell's file (and benchmark) as reasons name it; default the file names."""
    if not cells:
        raise ProbeError("no files to import")
    temperature = settings.temperature if settings.temperature is not None else _one(
        [c.temperature for c in cells], "the temperature")
    if temperature is None:
        raise ProbeError(f"the {tool} files do not record the sampling temperature; pass --temperature "
                         "(the one the benchmark sent: greedy 0 for arms that must serve the same tokens)")
    model = settings.model or _one([c.model for c in cells], "the model")
    # One prompt length in every file, else unknown (the mix's shape cannot be shown).
    prompts = {c.prompt_tokens_per_request for c in cells}
    prompt = prompts.pop() if len(prompts) == 1 else None
    out_tokens = max(c.output_tokens_per_request for c in cells)
    version = settings.tool_version or _one([c.tool_version for c in cells], "the tool's version")
    mix = MixSpec(name=settings.mix, prompt_tokens=prompt, output_tokens=out_tokens,
                  prompts_from=f"{tool}:{_one([c.prompts_from for c in cells], 'the prompts', 'unknown')}",
                  temperature=temperature)
    # Uniqueness by content and every member's date (gate.model.invariants): the same result given twice under
    # two names is one measurement, and each file's own date is checked, not only the newest.
    shown = (list(members) if members is not None and len(members) == len(cells)
             else [Path(n).name for n in names] if len(names) == len(cells)
             else [f"cell {i + 1}" for i in range(len(cells))])
    copy = repeated([(f"{tool} file {n}", _measurement(c)) for n, c in zip(shown, cells, strict=True)])
    if copy is not None:
        raise ProbeError(copy)
    if any(c.created_at is not None for c in cells):
        late = member_times([(f"{tool} file {n}", c.created_at) for n, c in zip(shown, cells, strict=True)],
                            time.time())
        if late is not None:
            raise ProbeError(late)
    reps: dict[int, int] = {}
    out: list[Cell] = []
    for c in cells:
        reps[c.concurrency] = reps.get(c.concurrency, 0) + 1
        out.append(c.cell(settings.mix, reps[c.concurrency]))
    dates = [c.created_at for c in cells if c.created_at is not None]
    created = max(dates) if dates else None
    files = ", ".join(Path(n).name for n in names)
    source = f"{tool} {version or '(version not recorded)'}: imported from {files}"
    try:
        record = ProbeRecord(
            arm=settings.arm, engine=settings.engine, engine_version=settings.engine_version,
            model=model, speculative=settings.speculative, workload=[mix],
            warmup_requests=_one([c.warmup_requests for c in cells], "warm-up requests", 0),
            repetitions=max(reps.values()),
            created_at=(datetime.fromtimestamp(created, UTC).isoformat(timespec="seconds")
                        if created is not None else None),
            source=source, cells=out)
    except ProbeError:  # our own one line (files that disagree), already saying what is wrong
        raise
    except ValueError as e:  # pydantic's ValidationError is a ValueError: a number out of the record's range
        raise ProbeError(f"the imported cells are not a probe record: {str(e).splitlines()[0]}") from None
    defects = record_defects(record)
    if defects:
        more = f" (and {len(defects) - 1} more)" if len(defects) > 1 else ""
        raise ProbeError(f"the imported record is not consistent: {defects[0]}{more}")
    return record


def import_files(tool: str, paths: Sequence[str | Path], settings: ImportSettings) -> ProbeRecord:
    """Read every file with the tool's reader and build the vetted record; any problem is ProbeError (exit 3)."""
    reader = READERS.get(tool)
    if reader is None:
        raise ProbeError(f"unknown --from {tool!r}; expected one of {', '.join(sorted(READERS))}")
    read = [reader(Path(p), settings) for p in paths]
    cells = [c for got in read for c in (got if isinstance(got, list) else [got])]
    members = [f"{Path(p).name}" + (f" benchmark {i + 1}" if isinstance(got, list) else "")
               for p, got in zip(paths, read, strict=True) for i in range(len(got) if isinstance(got, list) else 1)]
    return build_record(tool, cells, settings, [str(p) for p in paths], members)


__all__ = ["READERS", "ImportSettings", "ImportedCell", "build_record", "import_files"]
