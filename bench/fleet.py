"""Fleet verdicts at size: N pods x 6 h at a 30 s step in a real Prometheus and a real VictoriaMetrics.

    .venv/bin/python bench/fleet.py --json [--pods N ...] [--lookback-seconds S] [--window-seconds W]

For every size (default 10, 100, 1,000, 5,000 pods) the synthetic fleet of tests/gate/fleet_stack.py
(shaped like the real captures, only the families the verdict reads, exactly one pod below the SLO)
is loaded into each backend — `promtool tsdb create-blocks-from openmetrics` then a Prometheus 2.42
serving the blocks; a VictoriaMetrics 1.79 fed through `/api/v1/import/prometheus` — and the gate's
Prometheus source (`gate.evidence.prometheus.collect`, the path `specgate check` takes, with the fleet
evaluation inside) judges the fleet in a fresh interpreter. Printed per backend and size: `seconds`
(the first verdict, wall time), `seconds_repeat` (the best of two more), `queries` (HTTP queries the
verdict sent), `peak_rss_mib` (the verdict process' peak RSS), `backend_rss_mib` (the server's peak),
`load_seconds`, `bad_pods` (pods the verdict failed), `inconclusive_pods` and `injected_bad_pods`.
The plan judged: target L 2.0 in 95 % of 60 s windows over the last hour (the plan defaults; pass
`--lookback-seconds 21600` to judge all 6 h). A benchmark, not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.gate import fleet_stack  # noqa: E402

DEFAULT_PODS = (10, 100, 1000, 5000)
BACKENDS = ("prometheus", "victoriametrics")


def verdict(url: str, end: float, lookback: float, window: float) -> dict[str, Any]:
    """One fleet verdict through the gate's Prometheus source, counting the queries it sends."""
    from gate.evidence import prometheus as prom
    from gate.plan.model import SLO, PrometheusSource

    sent = {"n": 0}
    real_client_for = prom.client_for

    class Counting:
        def __init__(self, inner: prom.PromClient) -> None:
            self.inner = inner

        def query(self, path: str, params: dict[str, Any]) -> prom.Series:
            sent["n"] += 1
            return self.inner.query(path, params)

    prom.client_for = lambda src, u: Counting(real_client_for(src, u))  # type: ignore[assignment,return-value]
    slo = SLO(target_acceptance_length=2.0, window_seconds=window, lookback_seconds=lookback, min_windows=5,
              required_fraction=0.95)
    src = PrometheusSource(end=end, timeout_seconds=120, fleet={"group_by": ["model", "drafter_revision"]})
    times = []
    ev = None
    for _ in range(3):
        t0 = time.perf_counter()
        ev = prom.collect(src, url, window, lookback, min_drafts=1, slo=slo, k=fleet_stack.K, method="draft_model")
        times.append(time.perf_counter() - t0)
        if len(times) == 1:
            queries = sent["n"]
    assert ev is not None
    if ev.fleet is None:
        raise SystemExit(f"no fleet verdict: {ev.errors}")
    return {"seconds": times[0], "seconds_repeat": min(times[1:]), "queries": queries,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "status": ev.fleet.status.value, "rows": len(ev.fleet.rows),
            "bad_pods": [r.pod for r in ev.fleet.failed()],
            "inconclusive_pods": [r.pod for r in ev.fleet.inconclusive()]}


def run_size(pods: int, backend: str, workdir: Path, lookback: float, window: float) -> dict[str, Any]:
    end = int(time.time()) // 60 * 60 - 60
    bad = pods // 2
    spec = fleet_stack.FleetSpec(pods=pods, end=end, bad=(bad,))
    t0 = time.perf_counter()
    server = getattr(fleet_stack, backend)(spec, workdir / f"{backend}-{pods}")
    load = time.perf_counter() - t0
    try:
        out = subprocess.run([sys.executable, __file__, "--verdict", server.url, "--end", str(end),
                              "--lookback-seconds", str(lookback), "--window-seconds", str(window)],
                             capture_output=True, text=True, check=True, cwd=ROOT)
        got = json.loads(out.stdout)
        backend_rss = server.peak_rss_mib()
    finally:
        server.stop()
    return {"backend": backend, "pods": pods, "seconds": round(got["seconds"], 3),
            "seconds_repeat": round(got["seconds_repeat"], 3), "queries": got["queries"],
            "peak_rss_mib": round(got["peak_rss_mib"], 1),
            "backend_rss_mib": None if backend_rss is None else round(backend_rss, 1),
            "load_seconds": round(load, 1), "status": got["status"], "rows": got["rows"],
            "bad_pods": got["bad_pods"], "inconclusive_pods": got["inconclusive_pods"],
            "injected_bad_pods": [f"llm/{spec.pod(bad)}"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print the JSON document (the only output format)")
    ap.add_argument("--pods", type=int, nargs="+", default=list(DEFAULT_PODS))
    ap.add_argument("--backend", choices=BACKENDS, nargs="+", default=list(BACKENDS))
    ap.add_argument("--lookback-seconds", type=float, default=3600.0)
    ap.add_argument("--window-seconds", type=float, default=60.0)
    ap.add_argument("--verdict", metavar="URL", help=argparse.SUPPRESS)
    ap.add_argument("--end", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.verdict:
        print(json.dumps(verdict(args.verdict, args.end, args.lookback_seconds, args.window_seconds)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="specgate-fleet-") as tmp:
        for pods in args.pods:
            for backend in args.backend:
                t0 = time.perf_counter()
                rows.append(run_size(pods, backend, Path(tmp), args.lookback_seconds, args.window_seconds))
                print(f"bench/fleet: {backend} {pods} pods: verdict {rows[-1]['seconds']:.2f} s "
                      f"(load {rows[-1]['load_seconds']:.0f} s, total {time.perf_counter() - t0:.0f} s)",
                      file=sys.stderr)
    doc = {"lookback_seconds": args.lookback_seconds, "window_seconds": args.window_seconds,
           "history_hours": 6, "step_seconds": 30, "cpus": os.cpu_count(), "backends": rows}
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
