"""guidellm's benchmark report (`guidellm run --output kind=json|yaml`, guidellm 0.8) → one probe cell per benchmark.

A report holds one `GenerativeBenchmark` per operating point guidellm ran (`benchmarks[]`; a
`concurrent` profile with `streams: [1, 4]` writes two). Field names are guidellm's own
(`guidellm/benchmark/schemas/benchmark.py`, `guidellm/schemas/request_stats.py`, read at 0.8.1):

| guidellm field | meaning there | cell |
|---|---|---|
| `metadata.guidellm_version` | the version that wrote the report | `source` |
| `config.spec.backend.model`, `.extras.body.temperature` | served model name; what every request body carries | `model`; the mix's temperature |
| `benchmarks[].config.strategy.type_`, `.streams` | `concurrent` (N streams) or `synchronous` (one) | `concurrency` (any other profile: refused, not a closed-loop cell) |
| `scheduler_metrics.measure_start_time`, `measure_end_time`; `duration` | the measured window: first send to last response end (warm-up and cool-down outside it) | `wall_seconds` = `duration` |
| `requests.successful/errored/incomplete[]` | every request, warm-up included | those guidellm measured: ending at or after the window's start and starting at or before its end (its `get_within_range`) |
| `info.timings.request_start`, `first_token_iteration`, `last_token_iteration` | epoch seconds: send, first and last streamed token | TTFT = first − send; TPOT = (last − first) / (tokens − 1) |
| `output_tokens` (server usage, else guidellm's count), `prompt_tokens` | per request | `output_tokens`, `prompt_tokens` |
| `info.timings.token_iterations` | streamed chunks that carried tokens | at most one chunk per token |

guidellm's `inter_token_latency_ms` is our TPOT: (last token − first token) / (output tokens − 1). Its
`time_per_output_token_ms` is not: (last token − send) / output tokens counts the TTFT in. The report
keeps no per-chunk times, so the cell's chunk gaps stay unknown.

Consistency, each a ProbeError naming the field: `metrics.request_totals` is the measured requests
counted here, `metrics.output_token_count.successful.total_sum` their tokens, `duration` is
`measure_end_time − measure_start_time`, `output_tokens_per_second.successful.mean` (guidellm's served
rate) is tokens / `duration`, and the medians guidellm reports for TTFT and ITL are its own percentile of
the requests' values (weights 1 and tokens − 1; the smallest value whose cumulative weight reaches ½,
`Percentiles.from_pdf`). The cell's quantiles are the probe's (linear interpolation), so its p50 may sit
between the two middle requests where guidellm's names the lower one. A measured request that began
before the window (a warm-up by duration cut through it) is refused: the window is then no span of sends.
Reservoir-sampled reports (`--metrics sample_size=N`, fewer requests kept than counted) are refused:
their requests are not the ones guidellm measured.

Not in the report: the engine's kind and version, the arm, the speculative config (the user's flags).
`warmup_requests` is the fewest requests any benchmark of the report ran before its window.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from gate.evidence.probes import ProbeError
from gate.inputs.loading import Limits, load_json, load_yaml
from gate.probe.importers.common import (
    TIME_SLACK_SECONDS,
    ImportedCell,
    RequestTimes,
    check_requests,
    close,
    finite_number,
    impossible,
    not_same,
    whole_number,
)
from gate.status import InputError

# A report keeps every request's prompt, output and arguments: ~15 KB a request at 64 tokens.
REPORT_LIMITS = Limits(max_bytes=256 << 20, max_depth=32)
CLOSED_LOOP = ("concurrent", "synchronous")
STATUSES = ("successful", "errored", "incomplete")
# guidellm's medians are its percentile of the very floats the importer recomputes (1000 × a difference of
# two epoch stamps, ÷ (tokens − 1) for ITL): they agree to rounding, far inside a millisecond of slack.
MEDIAN_REL_TOL = 1e-9


def _obj(v: object, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ProbeError(f"{where} is {str(v)[:40]!r}, not an object (is it guidellm's JSON or YAML report?)")
    return v


def _get(doc: dict[str, Any], path: str, where: str) -> Any:
    """doc[a][b]… for path "a.b…", else ProbeError naming the missing field."""
    cur: Any = doc
    done: list[str] = []
    for key in path.split("."):
        if not isinstance(cur, dict) or key not in cur:
            at = ".".join(done) or "the report"
            raise ProbeError(f"{where}: no {path!r} ({at} has no {key!r}; is it guidellm 0.8's report?)")
        cur = cur[key]
        done.append(key)
    return cur


def guidellm_percentile(pairs: Sequence[tuple[float, float]], p: float) -> list[float]:
    """guidellm's percentile of weighted values (`DistributionSummary.from_values` → `Percentiles.from_pdf`):
    equal values merged, weights normalised to probabilities, the first value whose cumulative
    probability reaches p (`searchsorted(..., side="left")`). Returned as the candidates: one value, or
    two where the cumulative sum lands within float rounding of p (numpy may round either way)."""
    weights: dict[float, float] = {}
    for v, w in pairs:
        weights[v] = weights.get(v, 0.0) + w
    values = sorted(v for v, w in weights.items() if w > 0)
    if not values:
        return [0.0]  # guidellm writes 0.0 for an empty distribution
    total = sum(weights[v] for v in values)
    cdf, run = [], 0.0
    for v in values:
        run += weights[v] / total
        cdf.append(run)
    i = min(bisect.bisect_left(cdf, p), len(values) - 1)
    out = [values[i]]
    if abs(cdf[i] - p) <= 1e-9 and i + 1 < len(values):
        out.append(values[i + 1])
    if i > 0 and abs(cdf[i - 1] - p) <= 1e-9:
        out.append(values[i - 1])
    return out


def _temperature(spec: dict[str, Any], where: str) -> float | None:
    """The temperature every request body carried: the backend's `extras.body.temperature`, else None
    (guidellm then sends none and the engine's default applies, which the report cannot say)."""
    backend = spec.get("backend") if isinstance(spec.get("backend"), dict) else {}
    extras = backend.get("extras") if isinstance(backend, dict) else None
    body = extras.get("body") if isinstance(extras, dict) else None
    t = body.get("temperature") if isinstance(body, dict) else None
    return None if t is None else finite_number(t, f"{where}: config.spec.backend.extras.body.temperature")


def _sent_temperature(req: dict[str, Any]) -> float | None:
    """The temperature in the request's own `request_args` body (a JSON string), where guidellm kept it."""
    raw = req.get("request_args")
    if not isinstance(raw, str):
        return None
    try:
        body = json.loads(raw).get("body")
    except (ValueError, AttributeError):
        return None
    t = body.get("temperature") if isinstance(body, dict) else None
    return float(t) if isinstance(t, int | float) and not isinstance(t, bool) else None


def _concurrency(strategy: dict[str, Any], where: str) -> int:
    kind = strategy.get("type_")
    if kind not in CLOSED_LOOP:
        rate = strategy.get("rate")
        raise ProbeError(f"{where}: a {kind!r} benchmark" + (f" at rate {rate}" if rate is not None else "")
                         + ": a probe cell is C requests in flight; import guidellm's 'concurrent' or "
                         "'synchronous' profiles")
    if kind == "synchronous":
        return 1
    n = whole_number(strategy.get("streams"), f"{where}: config.strategy.streams")
    if n < 1:
        raise ProbeError(f"{where}: config.strategy.streams {n}")
    return n


def _benchmark(b: dict[str, Any], where: str, concurrency: int | None) -> tuple[ImportedCell, float | None, int]:
    """One benchmark → (its cell, the temperature its requests carried, its warm-up requests)."""
    conc = _concurrency(_obj(_get(b, "config.strategy", where), f"{where}: config.strategy"), where)
    if concurrency is not None and concurrency != conc:
        raise not_same(f"{where}: ran at concurrency {conc}, --concurrency says {concurrency}")
    start = finite_number(_get(b, "scheduler_metrics.measure_start_time", where),
                          f"{where}: scheduler_metrics.measure_start_time")
    end = finite_number(_get(b, "scheduler_metrics.measure_end_time", where),
                        f"{where}: scheduler_metrics.measure_end_time")
    duration = finite_number(_get(b, "duration", where), f"{where}: duration", positive=True)
    if not close(duration, end - start):
        raise impossible(f"{where}: duration {duration:.6g} is not measure_end_time − measure_start_time "
                         f"= {end - start:.6g} s")
    lists = _obj(_get(b, "requests", where), f"{where}: requests")
    measured: dict[str, list[dict[str, Any]]] = {}
    before = 0
    for status in STATUSES:
        got = lists.get(status)
        if not isinstance(got, list):
            raise ProbeError(f"{where}: requests.{status} is {str(got)[:40]!r}, not a list")
        measured[status] = []
        for i, req in enumerate(got):
            at = f"{where}: requests.{status}[{i}]"
            t = _obj(_get(_obj(req, at), "info.timings", at), f"{at}: info.timings")
            r_end = t.get("request_end") if t.get("request_end") is not None else t.get("resolve_end")
            if r_end is None:
                continue  # guidellm skips a request without an end (never sent)
            r_end = finite_number(r_end, f"{at}: info.timings.request_end")
            r_start = t.get("request_start") if t.get("request_start") is not None else t.get("resolve_start")
            r_start = r_end if r_start is None else finite_number(r_start, f"{at}: info.timings.request_start")
            if r_end >= start and r_start <= end:
                measured[status].append(req)
            elif r_end < start:
                before += 1  # guidellm's warm-up (a cool-down lies after the window)
    totals = _obj(_get(b, "metrics.request_totals", where), f"{where}: metrics.request_totals")
    for status in STATUSES:
        stated = whole_number(totals.get(status), f"{where}: metrics.request_totals.{status}")
        if stated != len(measured[status]):
            sampled = " (a reservoir-sampled report: run without --metrics sample_size)" if stated > len(
                measured[status]) else ""
            raise impossible(f"{where}: metrics.request_totals.{status} {stated} is not the {len(measured[status])} "
                             f"{status} requests inside its measured window{sampled}")
    ok = measured["successful"]
    if not ok:
        raise ProbeError(f"{where}: no successful request in its measured window: nothing was measured")
    times: list[RequestTimes] = []
    prompts: list[int | None] = []
    temps: set[float | None] = set()
    ttft_pairs: list[tuple[float, float]] = []
    itl_pairs: list[tuple[float, float]] = []
    for i, req in enumerate(ok):
        at = f"{where}: requests.successful[{i}]"
        t = req["info"]["timings"]
        send = finite_number(t.get("request_start"), f"{at}: info.timings.request_start")
        first = finite_number(t.get("first_token_iteration"), f"{at}: info.timings.first_token_iteration")
        last = finite_number(t.get("last_token_iteration"), f"{at}: info.timings.last_token_iteration")
        if send < start - TIME_SLACK_SECONDS:
            raise impossible(f"{at}: sent {start - send:.6g} s before the measured window began: the window "
                             "cut through it (a warm-up by duration); import a run warmed up by requests or none")
        if first < send or last < first:
            raise impossible(f"{at}: request_start {send:.6f}, first token {first:.6f}, last token {last:.6f} "
                             "are out of order")
        tokens = whole_number(req.get("output_tokens"), f"{at}: output_tokens")
        chunks = t.get("token_iterations")
        if chunks is not None and whole_number(chunks, f"{at}: info.timings.token_iterations") > tokens:
            raise impossible(f"{at}: it streamed {chunks} token chunks for {tokens} output tokens (every chunk "
                             "carries at least one token)")
        rt = RequestTimes(ttft=first - send, latency=last - send, output_tokens=tokens, start=send)
        times.append(rt)
        p = req.get("prompt_tokens")
        prompts.append(None if p is None else whole_number(p, f"{at}: prompt_tokens"))
        temps.add(_sent_temperature(req))
        ttft_pairs.append((rt.ttft * 1000.0, 1.0))
        if tokens > 1:
            itl_pairs.append(((last - first) * 1000.0 / (tokens - 1), float(tokens - 1)))
    check_requests(times, duration, where)
    total_out = sum(t.output_tokens for t in times)
    stated_out = finite_number(_get(b, "metrics.output_token_count.successful.total_sum", where),
                               f"{where}: metrics.output_token_count.successful.total_sum")
    if not close(stated_out, total_out):
        raise impossible(f"{where}: metrics.output_token_count.successful.total_sum {stated_out:g} is not its "
                         f"requests' output tokens {total_out}")
    rate = finite_number(_get(b, "metrics.output_tokens_per_second.successful.mean", where),
                         f"{where}: metrics.output_tokens_per_second.successful.mean")
    if not close(rate, total_out / duration):
        raise impossible(f"{where}: metrics.output_tokens_per_second.successful.mean {rate:.6g} is not output "
                         f"tokens / duration = {total_out / duration:.6g}")
    for key, pairs in (("time_to_first_token_ms", ttft_pairs), ("inter_token_latency_ms", itl_pairs)):
        median = finite_number(_get(b, f"metrics.{key}.successful.median", where),
                               f"{where}: metrics.{key}.successful.median")
        mine = guidellm_percentile(pairs, 0.5)
        if not any(math.isclose(median, m, rel_tol=MEDIAN_REL_TOL, abs_tol=1e-9) for m in mine):
            raise impossible(f"{where}: metrics.{key}.successful.median {median:.6g} is not guidellm's median of "
                             f"its own requests ({mine[0]:.6g} ms)")
    if len(temps) > 1:
        raise not_same(f"{where}: its requests carried different temperatures: "
                         f"{', '.join(sorted(map(str, temps)))}")
    known = [x for x in prompts if x is not None]
    whole = len(known) == len(prompts)
    failed = len(measured["errored"]) + len(measured["incomplete"])
    cell = ImportedCell(
        concurrency=conc, requests=len(ok) + failed, failed=failed, wall_seconds=duration,
        output_tokens=total_out, prompt_tokens=sum(known) if whole else None, times=tuple(times),
        output_tokens_per_request=max(t.output_tokens for t in times),
        prompt_tokens_per_request=known[0] if whole and len(set(known)) == 1 else None,
        created_at=start)
    return cell, temps.pop(), before


def read_guidellm(path: Path, concurrency: int | None = None, temperature: float | None = None) -> list[ImportedCell]:
    """One report → one cell per benchmark, in the report's order (module docstring).

    `concurrency`, when given, must be every benchmark's; `temperature`, when given, must be the one
    the report records its requests carried, where it records one."""
    where = f"guidellm report {path}"
    try:
        doc = (load_yaml(path, "guidellm report", REPORT_LIMITS) if path.suffix.lower() in (".yaml", ".yml")
               else load_json(path, "guidellm report", REPORT_LIMITS))
    except InputError as e:
        raise ProbeError(str(e)) from None
    doc = _obj(doc, where)
    version = _get(doc, "metadata.guidellm_version", where)
    spec = _obj(_get(doc, "config.spec", where), f"{where}: config.spec")
    model = spec.get("backend", {}).get("model") if isinstance(spec.get("backend"), dict) else None
    data = spec.get("data")
    kinds = sorted({str(d["kind"]) for d in data if isinstance(d, dict) and isinstance(d.get("kind"), str)}) \
        if isinstance(data, list) else []
    benchmarks = _get(doc, "benchmarks", where)
    if not isinstance(benchmarks, list) or not benchmarks:
        raise ProbeError(f"{where}: benchmarks is {str(benchmarks)[:40]!r}, not a non-empty list")
    stated_t = _temperature(spec, where)
    cells: list[ImportedCell] = []
    warmups: list[int] = []
    for n, b in enumerate(benchmarks):
        at = f"{where}: benchmarks[{n}]"
        cell, sent, before = _benchmark(_obj(b, at), at, concurrency)
        if sent is not None and stated_t is not None and sent != stated_t:
            raise not_same(f"{at}: its requests carried temperature {sent:g}, the backend's extras say {stated_t:g}")
        t = stated_t if stated_t is not None else sent
        if temperature is not None and t is not None and t != temperature:
            raise not_same(f"{at}: guidellm sent temperature {t:g}, --temperature says {temperature:g}")
        cells.append(replace(cell, temperature=t))
        warmups.append(before)
    return [replace(cell, tool_version=version if isinstance(version, str) and version else None,
                    model=model if isinstance(model, str) and model else None,
                    prompts_from="+".join(kinds) or None, warmup_requests=min(warmups)) for cell in cells]
