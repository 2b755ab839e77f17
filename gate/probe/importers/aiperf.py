"""AIPerf's per-request export (`profile_export.jsonl`, AIPerf 0.13) → one probe cell.

AIPerf (NVIDIA's successor of genai-perf) writes one `MetricRecordInfo` a line
(`aiperf/common/models/record_models.py`): `{"metadata": {...}, "metrics": {tag: {"value", "unit"}},
"error": {...} | null}`. What the cell takes, by AIPerf's own names:

| AIPerf | meaning there (its source) | cell |
|---|---|---|
| `metadata.benchmark_phase` | `"warmup"` or `"profiling"` (`CreditPhase`) | warm-up lines are counted, not measured |
| `metadata.request_start_ns`, `request_end_ns` | wall clock (`time.time_ns`) at send / at the end | wall = last end − first start; `created_at` |
| `metadata.was_cancelled`, `error` | | failed requests |
| `metrics.time_to_first_token` | first response − request start (`TTFTMetric`) | TTFT |
| `metrics.request_latency` | final response − request start (`RequestLatencyMetric`) | TPOT = (latency − TTFT) / (tokens − 1) |
| `metrics.output_sequence_length` | output + reasoning tokens (`OutputSequenceLengthMetric`) | output tokens |
| `metrics.input_sequence_length` | prompt tokens | prompt tokens |
| `metrics.inter_token_latency` | (latency − TTFT) / (OSL − 1) (`InterTokenLatencyMetric`, without `--per-chunk-usage`) | must equal our TPOT |

Units are the export's display units (`"ms"` for times; `ns`, `us`, `s` are converted too; another unit is
refused). The JSONL does not record the concurrency (pass `--concurrency`, the `--concurrency` AIPerf ran
with), the model, the engine or the temperature; AIPerf's version is read from `profile_export_aiperf.json`
beside the file where it is there (`aiperf_version`). Impossible numbers are a ProbeError naming the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gate.evidence.probes import ProbeError
from gate.inputs.loading import Limits, load_json, read_jsonl
from gate.probe.importers.common import (
    ImportedCell,
    RequestTimes,
    check_requests,
    close,
    finite_number,
    impossible,
    whole_number,
)
from gate.status import InputError

JSONL_LIMITS = Limits(max_bytes=256 << 20, max_depth=8)
MAX_LINES = 1_000_000
SUMMARY = "profile_export_aiperf.json"
SUMMARY_LIMITS = Limits(max_bytes=64 << 20, max_depth=32)
_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}


def _seconds(metrics: dict[str, Any], tag: str, where: str) -> float | None:
    m = metrics.get(tag)
    if m is None:
        return None
    if not isinstance(m, dict) or "value" not in m:
        raise ProbeError(f"{where}: metrics.{tag} is {m!r}, not {{'value', 'unit'}}")
    unit = m.get("unit")
    if unit not in _SECONDS:
        raise ProbeError(f"{where}: metrics.{tag} in unit {unit!r}; expected one of {', '.join(_SECONDS)}")
    return finite_number(m["value"], f"{where}: metrics.{tag}") * _SECONDS[unit]


def _tokens(metrics: dict[str, Any], tag: str, where: str) -> int | None:
    m = metrics.get(tag)
    if m is None:
        return None
    if not isinstance(m, dict) or "value" not in m:
        raise ProbeError(f"{where}: metrics.{tag} is {m!r}, not {{'value', 'unit'}}")
    return whole_number(m["value"], f"{where}: metrics.{tag}")


def _version(path: Path) -> str | None:
    """`aiperf_version` of the run's summary beside the JSONL, where it is there and readable."""
    summary = path.parent / SUMMARY
    if not summary.is_file():
        return None
    try:
        doc = load_json(summary, "AIPerf summary", SUMMARY_LIMITS)
    except InputError as e:
        raise ProbeError(str(e)) from None
    v = doc.get("aiperf_version") if isinstance(doc, dict) else None
    return v if isinstance(v, str) and v and v != "unknown" else None


def read_aiperf(path: Path, concurrency: int | None = None) -> ImportedCell:
    """One `profile_export.jsonl` → one cell (module docstring); `concurrency` is required (not in the file)."""
    where = f"AIPerf export {path}"
    if concurrency is None:
        raise ProbeError(f"{where}: AIPerf's per-request export does not record the concurrency; pass "
                         "--concurrency (the --concurrency AIPerf ran with)")
    try:
        lines = read_jsonl(path, "AIPerf export", JSONL_LIMITS, MAX_LINES)
    except InputError as e:
        raise ProbeError(str(e)) from None
    warmups = failed = 0
    starts: list[int] = []
    ends: list[int] = []
    times: list[RequestTimes] = []
    prompts: list[int | None] = []
    for n, doc in lines:
        at = f"{where}:{n}"
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        metrics = doc.get("metrics") if isinstance(doc, dict) else None
        if not isinstance(meta, dict) or not isinstance(metrics, dict):
            raise ProbeError(f"{at}: not an AIPerf record (no metadata / metrics object)")
        phase = meta.get("benchmark_phase")
        if phase == "warmup":
            warmups += 1
            continue
        if phase != "profiling":
            raise ProbeError(f"{at}: benchmark_phase {phase!r}, expected 'warmup' or 'profiling'")
        start = whole_number(meta.get("request_start_ns"), f"{at}: metadata.request_start_ns")
        end = whole_number(meta.get("request_end_ns"), f"{at}: metadata.request_end_ns")
        if end < start:
            raise impossible(f"{at}: request_end_ns {end} is before request_start_ns {start}")
        starts.append(start)
        ends.append(end)
        if doc.get("error") is not None or meta.get("was_cancelled"):
            failed += 1
            continue
        ttft = _seconds(metrics, "time_to_first_token", at)
        latency = _seconds(metrics, "request_latency", at)
        osl = _tokens(metrics, "output_sequence_length", at)
        if ttft is None or latency is None or osl is None:
            raise ProbeError(f"{at}: a completed request without time_to_first_token, request_latency or "
                             "output_sequence_length (was the endpoint streaming?)")
        if latency > (end - start) * 1e-9 + 1e-3:
            raise impossible(f"{at}: request_latency {latency:.6g} s is longer than its request_end_ns − "
                             f"request_start_ns {(end - start) * 1e-9:.6g} s")
        t = RequestTimes(ttft=ttft, latency=latency, output_tokens=osl, start=start * 1e-9)
        itl = _seconds(metrics, "inter_token_latency", at)
        if itl is not None and t.tpot is not None and not close(itl, t.tpot):
            raise impossible(f"{at}: inter_token_latency {itl:.6g} s is not (request_latency − TTFT) / (OSL − 1) "
                             f"= {t.tpot:.6g} s")
        times.append(t)
        prompts.append(_tokens(metrics, "input_sequence_length", at))
    if not times:
        raise ProbeError(f"{where}: no completed profiling request: nothing was measured")
    wall = (max(ends) - min(starts)) * 1e-9
    if wall <= 0:
        raise impossible(f"{where}: its requests span {wall:g} s")
    check_requests(times, wall, where)
    known = [p for p in prompts if p is not None]
    return ImportedCell(
        concurrency=concurrency, requests=len(starts), failed=failed, wall_seconds=wall,
        output_tokens=sum(t.output_tokens for t in times),
        prompt_tokens=sum(known) if len(known) == len(prompts) else None, times=tuple(times),
        output_tokens_per_request=max(t.output_tokens for t in times),
        prompt_tokens_per_request=known[0] if len(known) == len(prompts) and len(set(known)) == 1 else None,
        tool_version=_version(path), created_at=min(starts) * 1e-9, warmup_requests=warmups)
