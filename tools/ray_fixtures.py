"""Write tests/fixtures/ray/*.txt: Ray Serve LLM's re-export of vLLM, GENERATED from real vLLM pages and Ray's source.

No Ray cluster runs here. What Ray does to vLLM's families is read from the source and applied to the
real vLLM 0.32 CPU captures in tests/fixtures/vllm/ (tools/refresh_captures.py recorded them):

- Ray 2.60.0 `ray/llm/_internal/serve/engines/vllm/vllm_engine.py:623-628`: a Serve LLM deployment with
  `log_engine_metrics` gives vLLM `RayPrometheusStatLogger` as its stat logger;
- vLLM 0.32 `vllm/v1/metrics/ray_wrappers.py:70-80` `_get_sanitized_opentelemetry_name`: every character
  outside [a-zA-Z0-9_] becomes `_` (`vllm:x` -> `vllm_x`); `:38-57`: every series gets the tag `ReplicaId`
  (the Serve replica's unique id; "" outside Serve);
- Ray 2.60.0 `ray/_private/telemetry/open_telemetry_metric_recorder.py:21,230,257,284,312`: each metric is
  registered as `ray_<name>` (NAMESPACE = "ray");
- Ray 2.60.0 `ray/dashboard/modules/metrics/dashboards/serve_llm_dashboard_panels.py:30,45`: Ray's own
  dashboard selects `ray_vllm_*` series by `model_name` and sums them `by(WorkerId)`: the series carry the
  worker's `WorkerId`.

Two replicas are written: replica A from the n-gram arm's pages, replica B from the self-draft arm's, so
their numbers differ. The pages keep only vLLM's families (the engine process's python_/process_ families
are not what a Ray metrics agent serves) and drop `*_created` series (OpenTelemetry writes none). Ray's
other tags (`Version`, `SessionName`, ...) are left out: nothing here says which of them reach these
series. Every page starts with comment lines saying this. Run: `.venv/bin/python tools/ray_fixtures.py`.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VLLM = ROOT / "tests" / "fixtures" / "vllm"
OUT = ROOT / "tests" / "fixtures" / "ray"
REPLICAS = (("a1b2c3d4", "04c6f0e1d2b3a4958677a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9", "ngram"),
            ("e5f6a7b8", "9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6b5a4938271605f4e", "draftself"))
HEADER = ("# GENERATED, NOT CAPTURED: tools/ray_fixtures.py renamed real vLLM 0.32 CPU captures ({pages}) as Ray\n"
          "# Serve LLM re-exports them: vLLM 0.32 vllm/v1/metrics/ray_wrappers.py:70-80 (':' -> '_'), :38-57 (ReplicaId tag);\n"
          "# Ray 2.60.0 ray/_private/telemetry/open_telemetry_metric_recorder.py:21,230 (ray_ prefix); WorkerId as Ray's\n"
          "# serve_llm_dashboard_panels.py:30,45 selects it. Two replicas; no Ray cluster produced this page.\n")
_SAMPLE = re.compile(r"^vllm:([a-zA-Z0-9_:]+?)(\{[^}]*\})? (.+)$")
_META = re.compile(r"^# (HELP|TYPE) vllm:(\S+)(.*)$")


def _sanitized(name: str) -> str:
    """ray_wrappers._get_sanitized_opentelemetry_name, then Ray's `ray_` namespace."""
    return "ray_" + re.sub(r"[^a-zA-Z0-9_]", "_", "vllm:" + name)


def replica_lines(text: str, replica: str, worker: str) -> tuple[list[str], list[str]]:
    """(HELP/TYPE lines, sample lines) of one vLLM page as one Ray replica's series."""
    meta, rows = [], []
    for line in text.splitlines():
        m = _META.match(line)
        if m:
            if not m[2].endswith("_created"):
                meta.append(f"# {m[1]} {_sanitized(m[2])}{m[3]}")
            continue
        m = _SAMPLE.match(line)
        if m is None or m[1].endswith("_created"):
            continue
        labels = m[2][1:-1] if m[2] else ""
        extra = f'ReplicaId="{replica}",WorkerId="{worker}"'
        rows.append(f"{_sanitized(m[1])}{{{labels + ',' if labels else ''}{extra}}} {m[3]}")
    return meta, rows


def page(window: str) -> str:
    """Both replicas' series, family by family (each family's HELP/TYPE once, then both replicas' samples)."""
    order: list[str] = []
    meta_of: dict[str, list[str]] = {}
    rows_of: dict[str, list[str]] = {}
    sources = []
    for replica, worker, arm in REPLICAS:
        src = VLLM / f"metrics-{arm}-{window}.txt"
        sources.append(src.relative_to(ROOT).as_posix())
        meta, rows = replica_lines(src.read_text(), replica, worker)
        for line in meta:
            fam = line.split()[2]
            if fam not in meta_of:
                order.append(fam)
                meta_of[fam] = []
            if line not in meta_of[fam]:
                meta_of[fam].append(line)
        for row in rows:
            name = row.split("{", 1)[0]
            fam = next((f for f in sorted(meta_of, key=len, reverse=True) if name.startswith(f)), name)
            rows_of.setdefault(fam, []).append(row)
    body = []
    for fam in order:
        body += meta_of[fam] + rows_of.get(fam, [])
    return HEADER.format(pages=", ".join(sources)) + "\n".join(body) + "\n"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for window in ("during", "after"):
        path = OUT / f"metrics-serve-{window}.txt"
        path.write_text(page(window))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
