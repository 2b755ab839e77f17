"""`vllm bench serve --save-result --save-detailed` JSON → one probe cell.

The field names are vLLM's own (`vllm/benchmarks/serve.py`, vLLM 0.32: `benchmark()` builds `result`,
`main_async()` adds the run's settings and drops the per-request lists unless `--save-detailed`):

| vLLM field | meaning there | cell |
|---|---|---|
| `max_concurrency` | `--max-concurrency` (None: open loop) | `concurrency` (None, or a finite `request_rate`: refused, not a closed-loop cell) |
| `num_prompts`, `completed`, `failed` | requests sent / succeeded / failed | `requests`, `failed_requests` |
| `duration` | `perf_counter` from before the first request to after the last (warm-ups before it) | `wall_seconds` |
| `total_output_tokens`, `output_lens` | Σ and per request `usage.completion_tokens` (0 for a failed one) | `output_tokens` |
| `total_input_tokens`, `input_lens` | prompt tokens (Σ over completed requests) | `prompt_tokens` |
| `ttfts`, `latencies` | first chunk − send, last chunk − send (s) | TTFT; TPOT = (latency − ttft) / (tokens − 1) |
| `itls` | gaps between chunks after the first (s) | `chunk_gap_seconds` |
| `start_times` | each request's send on `perf_counter` | requests inside `duration` |
| `spec_decode_acceptance_length`, `_num_drafts`, `_draft_tokens`, `_accepted_tokens`, `_acceptance_rate` (%) | the engine's `/metrics` deltas over the run | acceptance (rate / 100) |
| `model_id`, `date` (`%Y%m%d-%H%M%S`, the machine's local time) | | `model`, `created_at` |

TPOT is vLLM's own definition (`calculate_metrics`: `(latency − ttft) / (output_len − 1)`), the probe's too;
its medians (`median_ttft_ms`, `median_tpot_ms`) are recomputed from the per-request lists and must agree.
Not in the file, so the user's flags or null: the temperature it sent (sampling params are not saved), the
warm-up count, the dataset, vLLM's version.

Impossible numbers are a ProbeError naming the field: lists of another length than `num_prompts`,
`completed` + `failed` ≠ `num_prompts`, totals that are not the per-request sums, `output_throughput` ≠
tokens / duration, a TTFT longer than its request, more chunks than tokens, a request longer than the run,
a recomputed median that is not the file's, non-finite or negative times.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from gate.evidence.probes import ProbeError
from gate.inputs.loading import Limits, load_json
from gate.model.invariants import MEMBER_TIME, reason
from gate.probe.importers.common import (
    ImportedCell,
    RequestTimes,
    check_requests,
    close,
    finite_number,
    impossible,
    not_same,
    whole_number,
)
from gate.probe.runner import quantiles
from gate.status import InputError

# A detailed result holds every request's generated text and chunk gaps: ~2 KB a request at 64 tokens.
RESULT_LIMITS = Limits(max_bytes=256 << 20, max_depth=8)
LISTS = ("output_lens", "ttfts", "itls")


def _field(doc: dict[str, Any], key: str, where: str) -> Any:
    if key not in doc:
        raise ProbeError(f"{where}: no {key!r} (is it the JSON of vllm bench serve --save-result --save-detailed?)")
    return doc[key]


def _date(text: object) -> float | None:
    """vLLM writes `datetime.now().strftime("%Y%m%d-%H%M%S")`: local time without a zone, read as this
    machine's local time (the machine that ran the benchmark, usually)."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ProbeError(reason(MEMBER_TIME, f"date {text!r} is not vLLM's %Y%m%d-%H%M%S"))
    try:
        return datetime.strptime(text, "%Y%m%d-%H%M%S").timestamp()
    except ValueError:
        raise ProbeError(reason(MEMBER_TIME, f"date {text!r} is not vLLM's %Y%m%d-%H%M%S (an unreadable date is "
                                             "never dropped)")) from None


def _optional(doc: dict[str, Any], key: str, where: str) -> float | None:
    v = doc.get(key)
    return None if v is None else finite_number(v, f"{where}: {key}")


def read_vllm_bench(path: Path, concurrency: int | None = None) -> ImportedCell:
    """One result file → one cell (module docstring); `concurrency`, when given, must be the file's."""
    where = f"vllm bench result {path}"
    try:
        doc = load_json(path, "vllm bench result", RESULT_LIMITS)
    except InputError as e:
        raise ProbeError(str(e)) from None
    if not isinstance(doc, dict):
        raise ProbeError(f"{where}: not a JSON object")
    conc = doc.get("max_concurrency")
    rate = doc.get("request_rate", "inf")
    if conc is None:
        raise ProbeError(f"{where}: ran without --max-concurrency (open loop at request rate {rate}): a probe "
                         "cell is C requests in flight; run vllm bench serve with --max-concurrency C")
    if rate not in ("inf", None):
        raise ProbeError(f"{where}: ran at --request-rate {rate} capped at --max-concurrency {conc}: neither "
                         "closed nor open loop; import runs at --request-rate inf")
    conc_n = whole_number(conc, f"{where}: max_concurrency")
    if conc_n < 1:
        raise ProbeError(f"{where}: max_concurrency {conc!r}")
    if concurrency is not None and concurrency != conc_n:
        raise not_same(f"{where}: ran at --max-concurrency {conc_n}, --concurrency says {concurrency}")
    n = whole_number(_field(doc, "num_prompts", where), f"{where}: num_prompts")
    completed = whole_number(_field(doc, "completed", where), f"{where}: completed")
    failed = whole_number(_field(doc, "failed", where), f"{where}: failed")
    if completed + failed != n or n < 1:
        raise impossible(f"{where}: completed {completed} + failed {failed} is not num_prompts {n}")
    if completed == 0:
        raise ProbeError(f"{where}: none of its {n} requests completed: nothing was measured")
    lists: dict[str, list[Any]] = {}
    for key in (*LISTS, "latencies", "start_times", "input_lens"):
        v = doc.get(key)
        if v is None and key not in LISTS:
            continue
        if not isinstance(v, list) or len(v) != n:
            got = f"{len(v)} entries" if isinstance(v, list) else repr(v)[:40]
            raise ProbeError(f"{where}: {key} is {got}, expected a list of num_prompts {n} "
                             "(--save-detailed keeps the per-request lists)")
        lists[key] = v
    duration = finite_number(_field(doc, "duration", where), f"{where}: duration", positive=True)
    out_lens = [whole_number(v, f"{where}: output_lens[{i}]") for i, v in enumerate(lists["output_lens"])]
    total_out = whole_number(_field(doc, "total_output_tokens", where), f"{where}: total_output_tokens")
    if sum(out_lens) != total_out:
        raise impossible(f"{where}: total_output_tokens {total_out} is not the sum of output_lens {sum(out_lens)}")
    done = [i for i, k in enumerate(out_lens) if k > 0]  # vLLM writes 0 for a failed request
    if len(done) != completed:
        raise impossible(f"{where}: {len(done)} requests have output tokens, completed says {completed}")
    throughput = _optional(doc, "output_throughput", where)
    if throughput is not None and not close(throughput, total_out / duration):
        raise impossible(f"{where}: output_throughput {throughput:.6g} is not total_output_tokens / duration = "
                         f"{total_out / duration:.6g}")
    times: list[RequestTimes] = []
    for i in done:
        at = f"{where}: request {i}"
        ttft = finite_number(lists["ttfts"][i], f"{at}: ttft")
        gaps_raw = lists["itls"][i]
        if not isinstance(gaps_raw, list):
            raise ProbeError(f"{at}: itls is {gaps_raw!r}, not a list")
        gaps = tuple(finite_number(g, f"{at}: itl") for g in gaps_raw)
        latency = (finite_number(lists["latencies"][i], f"{at}: latency") if "latencies" in lists
                   else ttft + sum(gaps))
        start = finite_number(lists["start_times"][i], f"{at}: start_time") if "start_times" in lists else None
        times.append(RequestTimes(ttft=ttft, latency=latency, output_tokens=out_lens[i], chunk_gaps=gaps,
                                  start=start))
    check_requests(times, duration, where)
    prompt_total: int | None = None
    per_prompt: int | None = None
    if "input_lens" in lists:
        ins = [whole_number(lists["input_lens"][i], f"{where}: input_lens[{i}]") for i in done]
        prompt_total = sum(ins)
        stated = doc.get("total_input_tokens")
        if stated is not None and whole_number(stated, f"{where}: total_input_tokens") != prompt_total:
            raise impossible(f"{where}: total_input_tokens {stated} is not the completed requests' input_lens "
                             f"sum {prompt_total}")
        per_prompt = ins[0] if ins and len(set(ins)) == 1 else None
    for key, values in (("median_ttft_ms", [t.ttft for t in times]),
                        ("median_tpot_ms", [x for t in times if (x := t.tpot) is not None])):
        stated_ms = _optional(doc, key, where)
        mine = quantiles(values).p50
        if stated_ms is not None and mine is not None and not close(stated_ms / 1000.0, mine):
            raise impossible(f"{where}: {key} {stated_ms:.6g} is not the median of its own requests "
                             f"({mine * 1000:.6g} ms)")
    length = _optional(doc, "spec_decode_acceptance_length", where)
    drafts = _optional(doc, "spec_decode_num_drafts", where)
    rate_pct = _optional(doc, "spec_decode_acceptance_rate", where)
    model = doc.get("model_id")
    return ImportedCell(
        concurrency=conc_n, requests=n, failed=failed, wall_seconds=duration, output_tokens=total_out,
        prompt_tokens=prompt_total, times=tuple(times), output_tokens_per_request=max(out_lens),
        prompt_tokens_per_request=per_prompt, prompts_from=None,
        model=model if isinstance(model, str) and model else None,
        created_at=_date(doc.get("date")),
        acceptance_length=length if drafts else None,  # vLLM writes 0.0 for a run without drafts
        acceptance_rate=rate_pct / 100.0 if rate_pct is not None and drafts else None,
        drafts=drafts if drafts else None,
        draft_tokens=_optional(doc, "spec_decode_draft_tokens", where) if drafts else None,
        accepted_tokens=_optional(doc, "spec_decode_accepted_tokens", where) if drafts else None)
