"""The probe client's own ceiling: its received rate against a loopback null engine's send rate, per concurrency.

    .venv/bin/python bench/probe_ceiling.py [--json] [--tokens 64] [--repeats 3]

Why: the probe times every chunk in Python (one thread per request in flight); at high concurrency the client,
not the engine, can set the rate it reports (issue 23 item 2). The null engine (gate.probe.null_engine: vLLM
0.32's chunk fields, one token a chunk, as fast as it can, in its own process) costs nothing, so what the
client receives from it is the client's ceiling on this machine; `specgate probe` measures the same at its
start (gate.probe.ceiling) and marks cells within 2x of it client-bound. Also printed: the release spread
(seconds between the first and the last of the first C sends; the barrier of gate.probe.batch releases them
together). Medians over --repeats runs; every number is observed on this machine at this load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gate.probe.ceiling import NullEngine, measure_point  # noqa: E402

CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    ap.add_argument("--tokens", type=int, default=64, help="output tokens per request (default 64)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per concurrency, medians reported (default 3)")
    args = ap.parse_args()
    rows = []
    with NullEngine() as engine:
        measure_point(engine, 1, args.tokens, requests=4)  # warm the server and the client
        for c in CONCURRENCIES:
            runs = [measure_point(engine, c, args.tokens, requests=max(4 * c, 8)) for _ in range(args.repeats)]
            server = [p.server_tokens_per_second for p, _ in runs if p.server_tokens_per_second is not None]
            rows.append({"concurrency": c,
                         "client_tokens_per_second": statistics.median(p.tokens_per_second for p, _ in runs),
                         "server_tokens_per_second": statistics.median(server) if server else None,
                         "release_spread_seconds": statistics.median(s for _, s in runs)})
    try:
        load = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        load = None
    doc = {"tokens": args.tokens, "repeats": args.repeats, "loadavg": load, "points": rows}
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(f"{'C':>3} {'client tok/s':>13} {'server tok/s':>13} {'release spread':>15}   (loadavg {load})")
    for r in rows:
        srv = r["server_tokens_per_second"]
        print(f"{r['concurrency']:>3} {r['client_tokens_per_second']:>13,.0f} "
              f"{'-' if srv is None else format(srv, ',.0f'):>13} {r['release_spread_seconds'] * 1000:>12.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
