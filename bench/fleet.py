"""Fleet verdicts at size: N pods x 6 h at a 30 s step in a real Prometheus and a real VictoriaMetrics.

    .venv/bin/python bench/fleet.py --json [--pods N ...] [--backend B ...] [--plot PNG | --no-plot]
    .venv/bin/python bench/fleet.py --json --quick          # 5,000 pods only, both backends, no PNG

For every size (default 10, 100, 1,000, 5,000, 10,000 and 20,000 pods) the synthetic fleet of tests/gate/fleet_stack.py
(shaped like the real captures, only the families the verdict reads, exactly one pod below the SLO) is loaded
into each backend — `promtool tsdb create-blocks-from openmetrics` then a Prometheus 2.42 serving the blocks
(background compaction off); a VictoriaMetrics 1.79 fed through `/api/v1/import/prometheus` — and the gate's
Prometheus source (`gate.evidence.prometheus.collect`, the path `specgate check` takes, with the fleet
evaluation inside) builds the per-pod table and the acceptance line's fleet rule
(`gate.checks.acceptance.fleet_rule.judge_fleet`) judges it, in a fresh interpreter, three times.

Printed per backend and size: `seconds` (the first verdict, wall time), `seconds_repeat` (the best of two
more), `cpu_seconds` / `server_cpu_seconds` (CPU the verdict process and the backend spent on the first
verdict: on a shared machine these move less than wall time; `..._repeat`: the same for the repeat whose time
is reported, so a slow first verdict shows whether it did more work or waited longer), `load_average` (1-minute, just before and
after the verdicts), `queries` (HTTP queries the verdict sent), `peak_rss_mib` (the verdict process' peak
RSS), `backend_rss_mib` (the server's peak), `load_seconds` (backfill or import), `bad_pods` (pods the
verdict failed), `inconclusive_pods`, `injected_bad_pods`, and where the first verdict's time went:
`cost` (`answers_seconds` until every query was answered and read, `read_seconds` placing the answers'
points on the grid, summed over the query threads, `judge_seconds` building the table and judging it) and `per_query`
(for each query: `backend_seconds` until the answer's headers, i.e. the backend evaluating it,
`transfer_seconds` reading the body, `decode_seconds` JSON to typed series, bytes, points, `typed`, and with
`--alone N` `server_cpu_alone`: the backend's mean CPU seconds for the query sent alone N times after the verdicts).
With two or more sizes it writes `--plot` (default docs/scale-fleet.png: verdict time and peak RSS
against pods, both backends; matplotlib, Agg) and the JSON document beside it (docs/scale-fleet.json).
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
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gate.probe.progress import reporter  # noqa: E402
from tests.gate import fleet_stack  # noqa: E402
from tests.observability import fleet_backfill  # noqa: E402

DEFAULT_PODS = (10, 100, 1000, 5000, 10000, 20000)
QUICK_PODS = (5000,)
BACKENDS = ("prometheus", "victoriametrics")
PLOT = ROOT / "docs" / "scale-fleet.png"
LABELS = {"prometheus": "Prometheus 2.42", "victoriametrics": "VictoriaMetrics 1.79"}


def cpu_seconds_of(pid: int | None) -> float | None:
    """A process' user + system CPU seconds so far (/proc/PID/stat), or None."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib() -> float:
    """This process' peak RSS: VmHWM (of this program only; getrusage's ru_maxrss keeps the high-water mark of
    the parent it was forked from across exec, which once showed the bench's import buffers as the verdict's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def alone_cpu(url: str, server_pid: int | None, path: str, params: dict[str, str], times: int) -> float | None:
    """The backend's CPU seconds for one query sent alone, the mean of `times` sends one after another (Prometheus
    ignores `nocache`).

    Why: in a verdict every query runs at once, so a query's `backend_seconds` (until its headers) holds the wait
    behind the others; the server's CPU across one query alone is what that query costs it (/proc ticks are 10 ms,
    hence the mean of several)."""
    if server_pid is None or times <= 0:
        return None
    s0 = cpu_seconds_of(server_pid)
    for _ in range(times):
        with urllib.request.urlopen(f"{url}{path}?{urllib.parse.urlencode(params)}", timeout=120) as r:
            r.read()
    s1 = cpu_seconds_of(server_pid)
    return None if s0 is None or s1 is None else (s1 - s0) / times


def verdict(url: str, end: float, lookback: float, window: float, server_pid: int | None,
            path: str = "raw", alone: int = 0) -> dict[str, Any]:
    """Three fleet verdicts through the gate's Prometheus source; the first one's costs, query by query (with
    `alone`, each of its queries then sent alone that many times for its own server CPU: `alone_cpu`)."""
    from gate.checks.acceptance.fleet_rule import FleetVerdict, judge_fleet
    from gate.evidence import prometheus as prom
    from gate.plan.model import SLO, PrometheusSource

    clients: list[prom.PromClient] = []
    real_client_for = prom.client_for

    def counting(src: PrometheusSource, u: str) -> prom.PromClient:
        clients.append(real_client_for(src, u))
        return clients[-1]

    prom.client_for = counting  # type: ignore[assignment]
    slo = SLO(target_acceptance_length=2.0, window_seconds=window, lookback_seconds=lookback, min_windows=5,
              required_fraction=0.95)
    src = PrometheusSource(end=end, timeout_seconds=120, fleet={"group_by": ["model", "drafter_revision"]})
    times = []
    cpus: list[tuple[float, float | None]] = []  # (verdict, server) CPU seconds of each verdict
    first: dict[str, Any] = {}
    ev = None
    fleet: FleetVerdict | None = None
    load_before = os.getloadavg()[0]
    for _ in range(3):
        s0, c0, t0 = cpu_seconds_of(server_pid), time.process_time(), time.perf_counter()
        ev = prom.collect(src, url, window, lookback, min_drafts=1, slo=slo, k=fleet_stack.K, method="draft_model",
                          path=path)
        j0 = time.perf_counter()
        fleet = None if ev.fleet is None else judge_fleet(ev.fleet, slo, src.fleet, require_engine_up=True)
        times.append((j1 := time.perf_counter()) - t0)
        s1 = cpu_seconds_of(server_pid)
        cpus.append((time.process_time() - c0, None if s0 is None or s1 is None else s1 - s0))
        if len(times) == 1:
            cost = getattr(ev.fleet, "cost", None)  # the Prometheus table's (gate.evidence.fleet.table.FleetCost)
            first = {"cpu_seconds": cpus[0][0], "server_cpu_seconds": cpus[0][1],
                     "ledger": list(clients[-1].ledger.entries), "cost": cost, "judge_seconds": j1 - j0}
    best = 1 + min(range(len(times) - 1), key=lambda i: times[1 + i])  # the repeat whose time is reported
    assert ev is not None
    if fleet is None:
        raise SystemExit(f"no fleet verdict: {ev.errors}")
    cost = first["cost"]
    w = int(window)
    at = end // w * w  # the grid's last step (gate.evidence.fleet.collect.plan_queries)
    grid = {"start": f"{at - (int(lookback) // w - 1) * w:.3f}", "end": f"{at:.3f}", "step": f"{w}s"}

    def params(e: Any) -> dict[str, str]:  # nocache: VictoriaMetrics would answer a repeat from its rollup cache
        where = grid if e.path.endswith("query_range") else {"time": f"{at:.3f}"}
        return {"query": e.query, **where, "nocache": "1"}

    alone_s = {e.query: alone_cpu(url, server_pid, e.path, params(e), alone) for e in first["ledger"]
               if e.path.endswith(("/query", "/query_range"))}
    r3 = lambda x: None if x is None else round(x, 3)  # noqa: E731
    return {"seconds": times[0], "seconds_repeat": min(times[1:]), "cpu_seconds": first["cpu_seconds"],
            "server_cpu_seconds": first["server_cpu_seconds"],
            "cpu_seconds_repeat": cpus[best][0], "server_cpu_seconds_repeat": cpus[best][1],
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "queries": len(first["ledger"]),
            "peak_rss_mib": peak_rss_mib(),
            "status": fleet.status.value, "rows": len(fleet.rows), "path": fleet.facts.path,
            "path_reason": fleet.facts.path_reason,
            "bad_pods": [r.pod for r in fleet.failed()],
            "inconclusive_pods": [r.pod for r in fleet.inconclusive()],
            "cost": None if cost is None else {"answers_seconds": round(cost.answers_seconds, 3),
                                               "read_seconds": round(cost.read_seconds, 3),
                                               "judge_seconds": round(cost.rows_seconds + first["judge_seconds"], 3)},
            "per_query": [{"query": e.query, "backend_seconds": round(e.backend_seconds, 3),
                           "transfer_seconds": round(e.transfer_seconds, 3),
                           "decode_seconds": round(e.decode_seconds, 3), "bytes": e.bytes, "points": e.points,
                           "typed": e.typed, "server_cpu_alone": r3(alone_s.get(e.query))} for e in first["ledger"]]}


def run_size(pods: int, backend: str, workdir: Path, lookback: float, window: float,
             path: str = "raw", alone: int = 0) -> dict[str, Any]:
    end = int(time.time()) // 60 * 60 - 60
    bad = pods // 2
    spec = fleet_stack.FleetSpec(pods=pods, end=end, bad=(bad,))
    t0 = time.perf_counter()
    where = workdir / f"{backend}-{pods}-{path}"
    server = getattr(fleet_stack, backend)(spec, where)
    load = time.perf_counter() - t0
    backfill = None
    if path == "recorded":  # the facts of the lookback and two windows before it, with the backend's own tool
        t1, first = time.perf_counter(), int(end - lookback - 2 * window)
        if backend == "prometheus":
            server = fleet_backfill.prometheus(server, spec, where, start=first)
        else:
            fleet_backfill.victoriametrics(server, spec, start=first)
        backfill = time.perf_counter() - t1
    try:
        out = subprocess.run([sys.executable, __file__, "--verdict", server.url, "--end", str(end),
                              "--server-pid", str(server.proc.pid), "--path", path,
                              "--lookback-seconds", str(lookback), "--window-seconds", str(window),
                              "--alone", str(alone)],
                             capture_output=True, text=True, check=True, cwd=ROOT)
        got = json.loads(out.stdout)
        backend_rss = server.peak_rss_mib()
    finally:
        server.stop()
    r3 = lambda x: None if x is None else round(x, 3)  # noqa: E731
    return {"backend": backend, "pods": pods, "seconds": r3(got["seconds"]), "seconds_repeat": r3(got["seconds_repeat"]),
            "cpu_seconds": r3(got["cpu_seconds"]), "server_cpu_seconds": r3(got["server_cpu_seconds"]),
            "cpu_seconds_repeat": r3(got["cpu_seconds_repeat"]),
            "server_cpu_seconds_repeat": r3(got["server_cpu_seconds_repeat"]),
            "load_average": got["load_average"], "queries": got["queries"],
            "peak_rss_mib": round(got["peak_rss_mib"], 1),
            "backend_rss_mib": None if backend_rss is None else round(backend_rss, 1),
            "load_seconds": round(load, 1), "status": got["status"], "rows": got["rows"],
            "path": got["path"], "path_reason": got["path_reason"],
            "backfill_seconds": None if backfill is None else round(backfill, 1),
            "bad_pods": got["bad_pods"], "inconclusive_pods": got["inconclusive_pods"],
            "injected_bad_pods": [f"llm/{spec.pod(bad)}"], "cost": got["cost"], "per_query": got["per_query"]}


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Verdict time (first and repeat) and peak RSS against pods, one line per backend (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    for backend, color in zip(BACKENDS, ("tab:orange", "tab:purple"), strict=True):
        pts = sorted((r for r in rows if r["backend"] == backend), key=lambda r: r["pods"])
        if not pts:
            continue
        pods = [r["pods"] for r in pts]
        ax_t.plot(pods, [r["seconds"] for r in pts], "o-", color=color, label=f"{LABELS[backend]}, first")
        ax_t.plot(pods, [r["seconds_repeat"] for r in pts], "s--", color=color, alpha=0.6,
                  label=f"{LABELS[backend]}, repeat")
        ax_m.plot(pods, [r["peak_rss_mib"] for r in pts], "o-", color=color, label=f"{LABELS[backend]}: verdict")
        if all(r["backend_rss_mib"] is not None for r in pts):
            ax_m.plot(pods, [r["backend_rss_mib"] for r in pts], "^:", color=color, alpha=0.6,
                      label=f"{LABELS[backend]}: server")
    ax_t.axhline(2.0, color="grey", lw=0.8, ls=":", label="2 s (issue 40, at 10,000 pods)")
    ax_t.set(xscale="log", yscale="log", xlabel="pods", ylabel="verdict wall seconds",
             title=f"Fleet verdict time (1 h in 60 s windows, {rows[0].get('path', 'raw')} path)")
    ax_m.axhline(256, color="grey", lw=0.8, ls=":", label="256 MiB (issue 40, verdict at 10,000 pods)")
    ax_m.set(xscale="log", xlabel="pods", ylabel="peak RSS MiB", title="Peak memory")
    loads = [x for r in rows for x in r["load_average"]]
    fig.suptitle(f"bench/fleet.py on {os.cpu_count()} CPUs, 1-min load average {min(loads):.1f}–{max(loads):.1f} "
                 "while the verdicts ran", fontsize=9)
    for ax in (ax_t, ax_m):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print the JSON document (the only output format)")
    ap.add_argument("--pods", type=int, nargs="+", default=None, help=f"sizes (default {list(DEFAULT_PODS)})")
    ap.add_argument("--quick", action="store_true", help=f"only {list(QUICK_PODS)} pods (no PNG)")
    ap.add_argument("--backend", choices=BACKENDS, nargs="+", default=list(BACKENDS))
    ap.add_argument("--lookback-seconds", type=float, default=3600.0)
    ap.add_argument("--window-seconds", type=float, default=60.0)
    ap.add_argument("--plot", type=Path, default=PLOT, help="the PNG written with two or more sizes")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--path", choices=("recorded", "raw"), default="recorded",
                    help="recorded (default: what a fleet with the mixin deployed gets): backfill the mixin's per-pod "
                         "window facts and judge from them (no fallback); raw: the range queries")
    ap.add_argument("--alone", type=int, default=0, metavar="N",
                    help="after the verdicts, send each query alone N times: per_query server_cpu_alone (its mean "
                         "server CPU seconds)")
    ap.add_argument("--verdict", metavar="URL", help=argparse.SUPPRESS)
    ap.add_argument("--end", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.verdict:
        print(json.dumps(verdict(args.verdict, args.end, args.lookback_seconds, args.window_seconds,
                                 args.server_pid, args.path, args.alone)))
        return 0
    sizes = list(QUICK_PODS) if args.quick else list(args.pods or DEFAULT_PODS)
    rows = []
    # On a terminal a bar (runs done, elapsed, ETA: optimistic, the sizes grow); else the same lines as before.
    with tempfile.TemporaryDirectory(prefix="specgate-fleet-") as tmp, reporter("bench/fleet:", unit="runs") as say:
        say.expect(units=len(sizes) * len(args.backend))
        for pods in sizes:
            for backend in args.backend:
                t0 = time.perf_counter()
                rows.append(run_size(pods, backend, Path(tmp), args.lookback_seconds, args.window_seconds,
                                     args.path, args.alone))
                r = rows[-1]
                say(f"{backend} {pods} pods: verdict {r['seconds']:.2f} s, repeat "
                    f"{r['seconds_repeat']:.2f} s, cpu {r['cpu_seconds']:.2f} s + server {r['server_cpu_seconds']} s "
                    f"(repeat {r['cpu_seconds_repeat']:.2f} + {r['server_cpu_seconds_repeat']} s),"
                    f" {r['peak_rss_mib']:.0f} MiB, load {r['load_average']}, bad {r['bad_pods']} "
                    f"(backfill {r['load_seconds']:.0f} s, facts {r['backfill_seconds']} s, {r['path']} path, "
                    f"total {time.perf_counter() - t0:.0f} s)")
                say.advance()
    plotted = None
    if len({r["pods"] for r in rows}) >= 2 and not args.no_plot:
        plot(rows, args.plot)
        plotted = str(args.plot.resolve().relative_to(ROOT) if args.plot.resolve().is_relative_to(ROOT)
                      else args.plot)
    doc = {"path": args.path, "lookback_seconds": args.lookback_seconds, "window_seconds": args.window_seconds,
           "history_hours": 6, "step_seconds": 30, "cpus": os.cpu_count(), "plot": plotted, "backends": rows}
    if plotted is not None:  # the curve's points beside it
        args.plot.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
