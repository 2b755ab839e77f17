"""Exporter benchmark: one specgate scrape cycle against prometheus_client's generic parser.

A cycle is what the sidecar does per scrape once the page's bytes have arrived: decode, parse +
normalise (`Scraper.snapshot_from_page`, with the scraper's kept parser; side endpoints are
unreachable here, asked once), derive (`ExporterState.record_success` -> `WindowTracker.add`) and
collect (the specgate_* exposition, `exporter.collect.SpecgateExposition.render`: the bytes
`generate_latest` writes, as the sidecar serves them). The fetch itself is in
bench/side_by_side.py, next to a real Prometheus scraping the same pages. The reference is
`prometheus_client.parser.text_string_to_metric_families` on the same page, every sample
consumed. Both run in this process, best of several repetitions each (the minimum is the
least noisy estimate of cost on a shared machine). This prints ratios; it is not a timed test.
The ratio is for the page replayed as it is (zero deltas); the same cycle on pages whose counters
advance every scrape (`advancing_pages`, what traffic looks like) is printed next to it.

    python bench/exporter.py --json     # {"pages": [{"page", "page_bytes", ..., "phases"}, ...]}
    python bench/exporter.py --soak     # 10,000 cycles on the large page in a subprocess, RSS start/end
    python bench/exporter.py --curve    # cycle time and RSS against streams per page (1 ... 256), one
                                        # subprocess per point; writes docs/scale-exporter.png and .json
    python bench/exporter.py --cold     # the 53 KB page's cycle piece by piece, cold (48 MiB of memory
                                        # touched before each, as a second's other work does) and warm

Each side's figure is its best over `ROUNDS` rounds that take turns (ours, the reference, ours on
advancing pages, then again), so a quiet moment of the shared machine helps both sides alike.
`phases` splits the advancing cycle (best of the same repetitions, each phase on its own): parse +
normalise (`Scraper.snapshot_from_page`), derive (`ExporterState.record_success`), the windows
(`ExporterState.view`: the sliding windows' deltas and quantiles) and the exposition (the rows and
their text).

Pages: the real vLLM 0.32 ngram capture (tests/fixtures/vllm/metrics-ngram-after.txt) and a
large page generated from it by relabelling (8 models x 4 DP ranks = 32 streams, deterministic).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from exporter.collect import SpecgateExposition, families  # noqa: E402
from exporter.scrape import Scraper  # noqa: E402
from exporter.settings import ExporterSettings  # noqa: E402
from exporter.state import ExporterState  # noqa: E402

CAPTURE = ROOT / "tests" / "fixtures" / "vllm" / "metrics-ngram-after.txt"
MODELS = 8
RANKS = 4
SCRAPE_STEP_SECONDS = 5.0  # simulated time between scrapes (the sidecar default interval)
SOAK_CYCLES = 10_000
SOAK_WARMUP_CYCLES = 300  # 25 simulated minutes: snapshot ring and window history are full by then
ROUNDS = 3  # turns each side takes (best over all of them)
CURVE_STREAMS: tuple[tuple[int, int], ...] = ((1, 1), (2, 4), (8, 4), (32, 4), (64, 4))  # models x ranks
CURVE_PNG = ROOT / "docs" / "scale-exporter.png"


def large_page(capture: str, models: int = MODELS, ranks: int = RANKS) -> str:
    """The capture's families for `models` x `ranks` streams, by relabelling its only stream.

    Series with `model_name="tiny"` get one copy per (model, engine); series with only
    `engine="0"` (cache_config_info) one per engine; the rest (process_*, python_*) stay single.
    Copies stay inside their family block, so the page remains valid exposition.
    """
    out: list[str] = []
    for line in capture.splitlines():
        if line.startswith("#") or not line:
            out.append(line)
        elif 'model_name="tiny"' in line:
            for m in range(models):
                for r in range(ranks):
                    out.append(line.replace('model_name="tiny"', f'model_name="specgate/bench-model-{m}"')
                               .replace('engine="0"', f'engine="{r}"'))
        elif 'engine="0"' in line:
            out.extend(line.replace('engine="0"', f'engine="{r}"') for r in range(ranks))
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def closed_port() -> int:
    """A loopback port nobody listens on (the side endpoints of the bench's engine: refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cycle:
    """The sidecar's per-scrape work on one page, with simulated time advancing each call."""

    def __init__(self, text: str) -> None:
        self.raw = text.encode()  # only the bytes, as a sidecar holds a fetched page
        self.scraper = Scraper(f"http://127.0.0.1:{closed_port()}", engine="auto", timeout=0.5)
        self.state = ExporterState.from_settings(ExporterSettings(), started_at=0.0)
        self.exposition = SpecgateExposition(self.state)
        self.now = 1_000_000.0

    def warm_cycles(self) -> int:
        """Cycles until the longest sliding window (and a batch window) spans real snapshots."""
        s = self.state.settings
        return int(max([*s.windows, s.batch_window]) / SCRAPE_STEP_SECONDS) + 2

    def __call__(self) -> bytes:
        self.now += SCRAPE_STEP_SECONDS
        snap = self.scraper.snapshot_from_page(self.raw, self.now)
        self.state.record_success(snap, 0.0)
        return self.exposition.render()


_SAMPLE_VALUE = re.compile(r"^([^#\n][^\n]* )([0-9][0-9.e+]*)$", re.M)


def advancing_pages(text: str, n: int, whole: bool = True) -> list[bytes]:
    """`n` pages of `text` whose counters, histograms and gauges grow by 0.2 % a scrape (the start time,
    info gauges and ratios stay): what an engine with traffic serves. The replayed page has zero deltas,
    so its windows' quantile arithmetic short-circuits; these pages pay for it.

    `whole`: a value that is a whole number on the page (a counter of tokens or requests, a bucket's
    count: vLLM writes them as `1312.0`) stays a whole number, as an engine's counters do; sums and
    gauges grow by the factor. `whole=False` is the first benches' page (every value times the factor,
    so `1312.0` became `1312.7399999999998`: 18-character numbers no engine writes), kept for the
    figure the earlier notes reported."""
    return [advancing_page(text, i, whole) for i in range(n)]


def advancing_page(text: str, i: int, whole: bool = True) -> bytes:
    """The `i`-th of `advancing_pages` alone (the curve's large pages are made one at a time)."""
    f = 1 + 0.002 * i

    def sub(m: re.Match[str]) -> str:
        head = m.group(1)
        if "process_start" in head or "_info" in head or "perc" in head:
            return m.group(0)
        v = float(m.group(2))
        if whole and v.is_integer():
            return head + repr(float(round(v * f)))
        return head + repr(v * f)
    return _SAMPLE_VALUE.sub(sub, text).encode()


def reference_parse(text: str) -> int:
    """prometheus_client's parser, every family and sample consumed (imported here: the soak and curve
    children measure the exporter's memory, not the reference's)."""
    from prometheus_client.parser import text_string_to_metric_families

    n = 0
    for family in text_string_to_metric_families(text):
        for _ in family.samples:
            n += 1
    return n


def best_of(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def phase_times(cycle: Cycle, feed: Iterator[bytes], repeats: int) -> dict[str, float]:
    """Each phase of the advancing cycle, best of `repeats` (seconds): parse + normalise, derive, the
    windows (`view`: sliding windows' deltas and quantiles), the exposition (rows and text)."""
    best = dict.fromkeys(("parse_normalise", "derive", "windows", "exposition"), float("inf"))
    clock = time.perf_counter
    for _ in range(repeats):
        cycle.now += SCRAPE_STEP_SECONDS
        raw = next(feed)
        t0 = clock()
        snap = cycle.scraper.snapshot_from_page(raw, cycle.now)
        t1 = clock()
        cycle.state.record_success(snap, 0.0)
        t2 = clock()
        view = cycle.state.view()
        t3 = clock()
        cycle.exposition.writer.write(families(view))
        t4 = clock()
        for k, dt in zip(best, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            best[k] = min(best[k], dt)
    return best


def measure(name: str, text: str, repeats: int, rounds: int = ROUNDS) -> dict:
    """Both sides' best over `rounds` turns of `repeats` each (the turns alternate, see the docstring)."""
    cycle = Cycle(text)
    for _ in range(cycle.warm_cycles()):  # steady state: every sliding window has its start snapshot
        cycle()
    moving, legacy = Cycle(text), Cycle(text)
    n = moving.warm_cycles() + (rounds + 1) * repeats
    pages = advancing_pages(text, n)
    feed = iter(pages)
    legacy_feed = iter(advancing_pages(text, n, whole=False))
    # the reference parses the same advancing bytes, in the same order (it keeps no state between pages)
    texts = itertools.cycle([p.decode() for p in pages[moving.warm_cycles():]])

    def advancing() -> bytes:
        moving.raw = next(feed)
        return moving()

    def advancing_legacy() -> bytes:
        legacy.raw = next(legacy_feed)
        return legacy()
    for _ in range(moving.warm_cycles()):
        advancing()
        advancing_legacy()
    ours = theirs = ours_moving = theirs_moving = ours_legacy = float("inf")
    for _ in range(rounds):
        ours = min(ours, best_of(cycle, repeats))
        theirs = min(theirs, best_of(lambda: reference_parse(text), repeats))
        ours_moving = min(ours_moving, best_of(advancing, repeats))
        theirs_moving = min(theirs_moving, best_of(lambda: reference_parse(next(texts)), repeats))
        ours_legacy = min(ours_legacy, best_of(advancing_legacy, repeats))
    phases = phase_times(moving, feed, repeats)
    return {"page": name, "page_bytes": len(text.encode()), "specgate_cycle_seconds": ours,
            "prometheus_client_parse_seconds": theirs, "ratio": theirs / ours,
            "specgate_cycle_advancing_seconds": ours_moving,
            "prometheus_client_parse_advancing_seconds": theirs_moving,
            "ratio_advancing": theirs_moving / ours_moving,
            "specgate_cycle_advancing_float_scaled_seconds": ours_legacy,
            "ratio_advancing_float_scaled": theirs / ours_legacy,
            "phases_advancing_seconds": phases, "rounds": rounds, "repeats": repeats,
            "load_average_1m": os.getloadavg()[0]}


def pages() -> list[tuple[str, str, int]]:
    capture = CAPTURE.read_text()
    # Enough repetitions that the minimum is stable on a shared 2-core machine (5 on the large page
    # let one noisy run decide), times ROUNDS turns; the whole run stays under a minute.
    return [("vllm-0.32-ngram-capture", capture, 100),
            (f"vllm-generated-{MODELS}x{RANKS}-streams", large_page(capture), 10)]


def rss_mib() -> float:
    """Resident set size of this process now (Linux /proc), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def soak_child(cycles: int) -> dict:
    """RSS before the first cycle, once the exporter's bounded memory is full, and at the end.

    Growth is expected until the 5-minute snapshot ring (one snapshot per scrape) and the
    completed-window history (1,000 windows) are full; after that any growth would be a leak.
    """
    cycle = Cycle(large_page(CAPTURE.read_text()))
    page_bytes = len(cycle.raw)
    start = rss_mib()
    t0 = time.perf_counter()
    for _ in range(SOAK_WARMUP_CYCLES):
        cycle()
    warm = rss_mib()
    tracker = cycle.state.tracker
    full = (len(tracker.ring), len(tracker.completed))
    for _ in range(cycles - SOAK_WARMUP_CYCLES):
        cycle()
    end = rss_mib()
    return {"cycles": cycles, "page_bytes": page_bytes, "streams": MODELS * RANKS,
            "warmup_cycles": SOAK_WARMUP_CYCLES, "ring_snapshots": full[0], "completed_windows": full[1],
            "rss_start_mib": round(start, 2), "rss_after_warmup_mib": round(warm, 2), "rss_end_mib": round(end, 2),
            "rss_growth_after_warmup_mib": round(end - warm, 2), "rss_growth_total_mib": round(end - start, 2),
            "seconds": round(time.perf_counter() - t0, 2)}


def curve_child(models: int, ranks: int) -> dict:
    """One point of the curve: RSS once the exporter's bounded memory is full, then the cycle's time.

    RSS: a fresh process, the page replayed until the 5-minute ring is full and the completed-window
    history (1,000 windows, 1 per stream every batch window) too, holding the page's bytes as a sidecar
    does. Time: best cycle on pages whose counters advance (the windows' quantile work runs), made one
    at a time after the RSS is read."""
    streams = models * ranks
    capture = CAPTURE.read_text()
    cycle = Cycle(large_page(capture, models, ranks))
    page_bytes = len(cycle.raw)
    s = cycle.state.settings
    per_close = int(s.batch_window / SCRAPE_STEP_SECONDS)
    warm = max(cycle.warm_cycles(), (-(-s.history // streams) + 1) * per_close)
    start = rss_mib()
    t0 = time.perf_counter()
    for _ in range(warm):
        cycle()
    warm_seconds = time.perf_counter() - t0
    rss = rss_mib()
    full = (len(cycle.state.tracker.ring), len(cycle.state.tracker.completed))
    text = large_page(capture, models, ranks)
    repeats = max(4, min(200, 6400 // streams))
    best = float("inf")
    for i in range(1, repeats + 1):
        cycle.raw = advancing_page(text, i)
        t0 = time.perf_counter()
        cycle()
        best = min(best, time.perf_counter() - t0)
    return {"streams": streams, "models": models, "ranks": ranks, "page_bytes": page_bytes,
            "cycle_advancing_seconds": best, "repeats": repeats, "warmup_cycles": warm,
            "warmup_seconds": round(warm_seconds, 2), "ring_snapshots": full[0], "completed_windows": full[1],
            "rss_start_mib": round(start, 2), "rss_after_warmup_mib": round(rss, 2)}


def curve() -> dict:
    """Every point in its own subprocess (RSS is a process's); writes CURVE_PNG and its JSON beside it."""
    points = []
    for models, ranks in CURVE_STREAMS:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--curve-child", str(models), str(ranks)],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"curve point {models}x{ranks} failed: {r.stderr.strip()[-400:]}")
        points.append(json.loads(r.stdout))
    out = {"points": points, "load_average_1m": os.getloadavg()[0], "png": str(CURVE_PNG.relative_to(ROOT))}
    path = CURVE_PNG.with_suffix(".json")
    kept = json.loads(path.read_text()).get("side_by_side") if path.exists() else None
    # bench/side_by_side.py --write keeps its run beside the points
    path.write_text(json.dumps(out if kept is None else dict(out, side_by_side=kept), indent=1) + "\n")
    plot(points, CURVE_PNG)
    return out


def plot(points: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [p["streams"] for p in points]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    a.plot(xs, [p["cycle_advancing_seconds"] * 1e3 for p in points], "o-")
    a.set(xscale="log", yscale="log", xlabel="streams per page (models x DP ranks)", ylabel="ms per scrape cycle",
          title="cycle: parse + derive + windows + /metrics")
    b.plot(xs, [p["rss_after_warmup_mib"] for p in points], "o-", color="tab:red")
    b.set(xscale="log", xlabel="streams per page (models x DP ranks)", ylabel="MiB",
          title="RSS, ring and window history full")
    for ax in (a, b):
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.grid(True, alpha=0.3)
    fig.suptitle("specgate exporter cost against streams per page (bench/exporter.py --curve)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


EVICT_MIB = 48  # memory touched before each cold cycle: more than the machine's last-level cache


def cold(cycles: int = 200, evict: bool = True) -> dict:
    """Medians of one cycle of the capture, advancing, piece by piece, with `EVICT_MIB` of memory touched before
    each (`evict`; a sidecar scrapes once a second and the machine's other work evicts its caches in between)
    or back to back: decode, parse + normalise (`PageReader.read`), the adapter's snapshot, `check_snapshot`,
    derive (`ExporterState.record_success`), microseconds."""
    from exporter.sanity import check_snapshot

    scraper = Scraper("http://127.0.0.1:1/", engine="vllm", timeout=1.0)
    state = ExporterState.from_settings(ExporterSettings(), started_at=0.0)
    raws = advancing_pages(CAPTURE.read_text(), cycles + 3)
    junk = bytearray(EVICT_MIB << 20) if evict else bytearray()
    names = ("decode", "parse", "adapter", "check", "derive", "total")
    got: dict[str, list[float]] = {k: [] for k in names}
    for i, raw in enumerate(raws):
        for j in range(0, len(junk), 64):
            junk[j] = (junk[j] + 1) & 255
        t0 = time.perf_counter()
        text = raw.decode("utf-8", errors="replace")
        t1 = time.perf_counter()
        dropped: dict[str, int] = {}
        ad, page = scraper._reader.read(text, dropped)
        t2 = time.perf_counter()
        snap = ad.snapshot(page, 1000.0 + i, None)
        t3 = time.perf_counter()
        snap = check_snapshot(snap, dropped)
        t4 = time.perf_counter()
        state.record_success(snap, 0.0)
        t5 = time.perf_counter()
        if i >= 3:  # the first reads plan the page
            for k, a, b in zip(names, (t0, t1, t2, t3, t4, t0), (t1, t2, t3, t4, t5, t5), strict=True):
                got[k].append((b - a) * 1e6)
    return {"cycles": cycles, "evicted_mib": EVICT_MIB if evict else 0,
            "median_us": {k: round(statistics.median(v), 1) for k, v in got.items()},
            "load_average_1m": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object with per-page ratios")
    ap.add_argument("--soak", action="store_true", help=f"{SOAK_CYCLES} cycles on the large page in a subprocess")
    ap.add_argument("--cycles", type=int, default=SOAK_CYCLES, help=argparse.SUPPRESS)
    ap.add_argument("--soak-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--curve", action="store_true",
                    help=f"cycle time and RSS against streams per page; writes {CURVE_PNG.relative_to(ROOT)}")
    ap.add_argument("--curve-child", nargs=2, type=int, metavar=("MODELS", "RANKS"), help=argparse.SUPPRESS)
    ap.add_argument("--cold", action="store_true",
                    help=f"the 53 KB page's cycle piece by piece, cold ({EVICT_MIB} MiB touched before each) and warm")
    args = ap.parse_args(argv)
    if args.cold:
        got = {"cold": cold(), "warm": cold(evict=False)}
        if args.json:
            print(json.dumps(got))
        else:
            for k, r in got.items():
                print(f"{k}: " + ", ".join(f"{n} {v:.0f}" for n, v in r["median_us"].items())
                      + f" µs (medians of {r['cycles']}, load average {r['load_average_1m']:.1f})")
        return 0
    if args.soak_child:
        print(json.dumps(soak_child(args.cycles)))
        return 0
    if args.curve_child:
        print(json.dumps(curve_child(*args.curve_child)))
        return 0
    if args.curve:
        got = curve()
        if args.json:
            print(json.dumps({"curve": got}))
        else:
            for p in got["points"]:
                print(f"{p['streams']:4} streams {p['page_bytes']:>10} B  cycle {p['cycle_advancing_seconds'] * 1e3:9.3f} ms"
                      f"  RSS {p['rss_after_warmup_mib']:6.1f} MiB")
            print(f"wrote {got['png']} (load average {got['load_average_1m']:.1f})")
        return 0
    if args.soak:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--soak-child", "--cycles", str(args.cycles)],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            return 1
        print(json.dumps({"soak": json.loads(r.stdout)}, indent=None if args.json else 2))
        return 0
    results = [measure(name, text, reps) for name, text, reps in pages()]
    if args.json:
        print(json.dumps({"pages": results}))
    else:
        for r in results:
            print(f"{r['page']:34} {r['page_bytes']:>9} B  specgate {r['specgate_cycle_seconds'] * 1e3:8.3f} ms  "
                  f"prometheus_client {r['prometheus_client_parse_seconds'] * 1e3:8.3f} ms  ratio {r['ratio']:.1f}x  "
                  f"(counters advancing: {r['specgate_cycle_advancing_seconds'] * 1e3:.3f} ms against "
                  f"{r['prometheus_client_parse_advancing_seconds'] * 1e3:.3f} ms on the same pages, "
                  f"{r['ratio_advancing']:.1f}x; earlier benches' float-scaled pages against the replayed "
                  f"page: {r['ratio_advancing_float_scaled']:.1f}x)")
            ph = r["phases_advancing_seconds"]
            print(f"{'':34} phases (advancing): " + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in ph.items())
                  + f"  (load average {r['load_average_1m']:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
