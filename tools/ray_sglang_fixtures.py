"""Write tests/fixtures/ray/sglang/*.txt: SGLang behind Ray Serve LLM, GENERATED from real SGLang pages and source.

No Ray cluster runs here. What SGLang's Ray metric backend and Ray do to SGLang's families is read from the
source and applied to the real SGLang 0.5.23 CPU captures in tests/fixtures/sglang/0.5.23/ (recorded by
tools/refresh_sglang_captures.py):

- SGLang 0.5.23 `sglang/srt/ray/engine.py:240-243`: `RayEngine` (what Ray Serve LLM's SGLangServer runs)
  with `enable_metrics` installs `build_ray_stat_loggers()`: every collector emits through `ray.util.metrics`;
- SGLang 0.5.23 `sglang/srt/observability/ray_wrappers.py:134-143`: every character outside [a-zA-Z0-9_]
  becomes `_` (`sglang:x` -> `sglang_x`); `:94,113`: every series gets the tag `ReplicaId`, the Serve
  replica's unique id (`_get_replica_id`, `:59-66`: "" outside a replica actor); `:124-132`: histogram bounds
  <= 0 are dropped; `:176-179`: a counter's `inc(0)` records nothing (a counter still at 0 is absent, as is
  a histogram without an observation);
- SGLang 0.5.23 `sglang/srt/observability/metrics_collector.py:1393-1394,1817-1818`: `extra_metric_labels`
  join the scheduler's and the tokenizer's labels. ray-project/ray#64797 (merged; cherry-picked as #65083):
  Ray's SGLangServer sets them to `application`/`deployment`/`replica`, and each replica shows two `WorkerId`s:
  the replica actor's, where the tokenizer manager runs (`TokenizerMetricsCollector`, metrics_collector.py
  `:1822-2189`: request counters and latency histograms; it carries `ReplicaId`), and the rank-0
  `SchedulerActor`'s (`SchedulerMetricsCollector`, `:334-1821`: pool, KV and speculation gauges; `ReplicaId`
  "", it is no replica actor);
- Ray 2.60.0 `ray/_private/telemetry/open_telemetry_metric_recorder.py:21,230`: each metric is registered as
  `ray_<name>`; Ray's SGLang dashboard (`serve_llm_sglang_dashboard_panels.py`) reads
  `ray_sglang_prompt_tokens_total`, `ray_sglang_time_to_first_token_seconds_bucket`, `ray_sglang_token_usage`
  summed `by(WorkerId)`.

Two replicas are written: a1b2c3d4 from the n-gram arm's pages, e5f6a7b8 from the EAGLE-3 arm's, so their
numbers differ. Kept: the two collectors' families (the HTTP server's and the CPU monitor's are not there:
Ray Serve runs no SGLang HTTP server); `*_created` dropped. `replica` is the replica's unique id (as
`ReplicaId`), `application`/`deployment` are placeholders, Ray's other tags (`Version`, `SessionName`, ...)
are left out. Every page starts with comment lines saying this.
Run: `.venv/bin/python tools/ray_sglang_fixtures.py`.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SGLANG = ROOT / "tests" / "fixtures" / "sglang" / "0.5.23"
OUT = ROOT / "tests" / "fixtures" / "ray" / "sglang"
WINDOWS = ("before", "during", "after")
# (replica unique id, tokenizer worker's WorkerId, rank-0 scheduler worker's WorkerId, capture arm)
REPLICAS = (("a1b2c3d4", "3c1f0a9e8d7b6c5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e",
             "7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b", "ngram"),
            ("e5f6a7b8", "b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3",
             "d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7", "eagle3"))
APPLICATION, DEPLOYMENT = "llm_app", "LLMServer:tiny"
# The TokenizerMetricsCollector's families on the captures (metrics_collector.py:1822-2189); the rest of the
# collectors' families are the scheduler's (:334-1821).
TOKENIZER = frozenset({
    "cached_tokens_total", "e2e_request_latency_seconds", "generation_tokens_histogram", "generation_tokens_total",
    "num_requests_total", "prompt_tokens_histogram", "prompt_tokens_total", "request_time_per_output_token_seconds",
    "spec_verify_calls_total", "startup_cuda_graph_time_seconds", "startup_time_seconds",
    "time_to_first_token_seconds", "uncached_prompt_tokens_histogram"})
NOT_COLLECTORS = frozenset({"http_requests_active", "http_requests_total", "http_responses_total",
                            "process_cpu_seconds_total", "routing_keys_active"})
HEADER = ("# GENERATED, NOT CAPTURED: tools/ray_sglang_fixtures.py renamed real SGLang 0.5.23 CPU captures ({pages})\n"
          "# as SGLang's Ray metric backend re-exports them: SGLang 0.5.23 srt/observability/ray_wrappers.py:134-143\n"
          "# (':' -> '_'), :94,113 (ReplicaId), :124-132 (bounds <= 0 dropped), :176-179 (inc(0) records nothing);\n"
          "# Ray 2.60.0 open_telemetry_metric_recorder.py:21,230 (ray_ prefix); ray-project/ray#64797: two WorkerIds\n"
          "# per replica (tokenizer worker, rank-0 scheduler), application/deployment/replica on both. No Ray ran.\n")
_TYPE = re.compile(r"^# TYPE sglang:(\S+) (\S+)$")
_HELP = re.compile(r"^# HELP sglang:(\S+) ?(.*)$")
_SAMPLE = re.compile(r"^sglang:([a-zA-Z0-9_:]+?)(?:\{([^}]*)\})? (\S+)$")


def _ray_name(name: str) -> str:
    """ray_wrappers._get_sanitized_opentelemetry_name, then Ray's `ray_` namespace."""
    return "ray_" + re.sub(r"[^a-zA-Z0-9_]", "_", "sglang:" + name)


def _ascii(text: str) -> str:
    """ray_wrappers._get_ascii_documentation: dashes to '-', the rest of non-ASCII dropped."""
    return text.replace("\u2014", "-").replace("\u2013", "-").encode("ascii", "ignore").decode("ascii")


def families(text: str) -> dict[str, tuple[str, str, list[tuple[str, str, str]]]]:
    """A page's families in order: name -> (type, help, [(sample suffix, label text, value)])."""
    out: dict[str, tuple[str, str, list[tuple[str, str, str]]]] = {}
    helps: dict[str, str] = {}
    current = ""
    for line in text.splitlines():
        if m := _HELP.match(line):
            helps[m[1]] = m[2]
        elif m := _TYPE.match(line):
            current = m[1]
            out[current] = (m[2], helps.get(current, ""), [])
        elif (m := _SAMPLE.match(line)) and current and m[1].startswith(current):
            out[current][2].append((m[1][len(current):], m[2] or "", m[3]))
    return out


def _without_le(labels: str) -> str:
    """A sample's label text without its `le` (a histogram series' bucket bound)."""
    return ",".join(p for p in re.findall(r'[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"', labels) if not p.startswith('le="'))


def _kept(kind: str, rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """What Ray records of one family: no `_created`; no counter still at 0; no histogram series without an
    observation, nor its bounds <= 0."""
    rows = [r for r in rows if r[0] != "_created"]
    if kind == "counter":
        return [r for r in rows if float(r[2]) != 0.0]
    if kind != "histogram":
        return rows
    empty = {_without_le(labels) for suffix, labels, value in rows if suffix == "_count" and float(value) == 0.0}
    out = []
    for suffix, labels, value in rows:
        le = re.search(r'(?:^|,)le="([^"]*)"', labels)
        if _without_le(labels) in empty or (le is not None and float(le[1]) <= 0.0):
            continue
        out.append((suffix, labels, value))
    return out


def page(window: str) -> str:
    """Both replicas' series, family by family (HELP/TYPE once, then replica a1b2c3d4's, then e5f6a7b8's)."""
    order: list[str] = []
    meta: dict[str, str] = {}
    rows: dict[str, list[str]] = {}
    sources = []
    for replica, tokenizer_worker, scheduler_worker, arm in REPLICAS:
        src = SGLANG / arm / f"metrics-{window}.txt"
        sources.append(src.relative_to(ROOT).as_posix())
        for fam, (kind, doc, samples) in families(src.read_text()).items():
            if fam in NOT_COLLECTORS or fam.endswith("_created"):
                continue
            name = _ray_name(fam)
            if name not in meta:
                order.append(name)
                meta[name] = f"# HELP {name} {_ascii(doc)}\n# TYPE {name} {kind}"
            tok = fam in TOKENIZER
            extra = (f'application="{APPLICATION}",deployment="{DEPLOYMENT}",replica="{replica}",'
                     f'ReplicaId="{replica if tok else ""}",WorkerId="{tokenizer_worker if tok else scheduler_worker}"')
            for suffix, labels, value in _kept(kind, samples):
                rows.setdefault(name, []).append(f"{name}{suffix}{{{labels + ',' if labels else ''}{extra}}} {value}")
    body = [line for name in order for line in (meta[name], *rows.get(name, []))]
    return HEADER.format(pages=", ".join(sources)) + "\n".join(body) + "\n"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for window in WINDOWS:
        path = OUT / f"metrics-serve-{window}.txt"
        path.write_text(page(window))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
