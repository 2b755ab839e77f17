"""Side by side: a real Prometheus and the exporter's scraper read the same pages at the same interval.

One page server (a child process, HTTP/1.1 keep-alive) serves the two bench pages (the real vLLM
capture and the generated 8 x 4-stream page, see bench/exporter.py). The capture advances as an engine's
page with traffic does (`bench.exporter.advancing_pages`: counters and histograms +0.2 % a scrape, each
connection its own sequence, so a window's arithmetic runs as it does on a live engine; a replayed page
has zero deltas and lets it short-circuit); the generated page is served as it is (as many advancing
copies of 1.27 MB would hold hundreds of MB). `--static` serves the capture as it is too. A real
Prometheus (the one `make test` installs into .tools/bin) scrapes both every second; one child process per
page (`sidecar`: one sidecar per engine, as deployed) does, at the same interval, what the sidecar does per
scrape: fetch (`Scraper.fetch`), parse + normalise (`Scraper.snapshot_from_page`) and derive
(`ExporterState.record_success`). Each child starts on its own phase, in the middle of the longest stretch
between Prometheus' scrape starts and the other child's (`quiet_phase`): the page server is one Python
process, and two exchanges at once slow each other. At the end Prometheus is asked for the median of its
own `scrape_duration_seconds` per page over the children's window, and ours is the median of that
window's cycles. Medians, not minima: both sides see the same noisy machine. Printed, never asserted.

Then, in the same run and the same children, prometheus_client's parser (`bench.exporter.reference_parse`)
reads the pages as fetched at the same interval, as many times, after Prometheus' window has been read (so its
100+ ms on the large page never lands on one of Prometheus' scrapes): its median against our
parse + normalise + derive median is the ratio bench/exporter.py reports best-of, here cold, as a
scrape every second is. The 1-minute load average is printed at the start and the end.

    python bench/side_by_side.py [--seconds 30] [--json] [--write]

`--write` stores the result under "side_by_side" in docs/scale-exporter.json (the curve's points,
written by `bench/exporter.py --curve`, stay).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.exporter import CAPTURE, CURVE_PNG, advancing_pages, large_page, reference_parse  # noqa: E402
from exporter.scrape import Scraper  # noqa: E402
from exporter.settings import ExporterSettings  # noqa: E402
from exporter.state import ExporterState  # noqa: E402

PROMETHEUS = ROOT / ".tools" / "bin" / "prometheus"
PAGES = ("capture", "generated")


def page_texts() -> dict[str, bytes]:
    capture = CAPTURE.read_text()
    return {"capture": capture.encode(), "generated": large_page(capture).encode()}


def serve(port_file: Path, advancing: int = 0) -> None:
    """The page server (child process): /capture/metrics and /generated/metrics, until killed. With `advancing`,
    the capture is the first of that many advancing pages, the next one on each request of a connection."""
    bodies = page_texts()
    sequence = {"capture": advancing_pages(bodies["capture"].decode(), advancing)} if advancing else {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def setup(self) -> None:
            super().setup()
            self.served = 0  # requests answered on this connection

        def do_GET(self) -> None:  # noqa: N802
            name = self.path.strip("/").split("/")[0]
            pages = sequence.get(name)
            body = pages[min(self.served, len(pages) - 1)] if pages else bodies.get(name)
            if body is None or not self.path.endswith("/metrics"):
                self.send_error(404)
                return
            self.served += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            if not isinstance(sys.exc_info()[1], ConnectionError):  # a scraper stopped mid-exchange at the end
                super().handle_error(request, client_address)  # type: ignore[arg-type]

    httpd = Server(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    port_file.write_text(str(httpd.server_address[1]))
    httpd.serve_forever()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, what: str, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def prom_query(port: int, expr: str, at: float | None = None) -> list[dict]:
    params = {"query": expr} if at is None else {"query": expr, "time": repr(at)}
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)["data"]["result"]


def up(port: int) -> bool:
    try:
        return len([r for r in prom_query(port, "up == 1")]) == len(PAGES)
    except OSError:
        return False


def run(seconds: float, interval: float = 1.0, static: bool = False) -> dict:
    work = Path(tempfile.mkdtemp(prefix="specgate-side-by-side-"))
    procs: list[subprocess.Popen] = []
    try:
        port_file = work / "port"
        # enough advancing pages for every request of this run on one connection (ours: both phases)
        advancing = 0 if static else int(2 * seconds / interval) + 60
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", str(port_file),
                                       "--advancing", str(advancing)]))
        wait_for(port_file.exists, "the page server", 20)
        wait_for(lambda: port_file.read_text() != "", "the page server's port", 5)
        page_port = int(port_file.read_text())
        prom_port = free_port()
        jobs = "".join(f"  - job_name: {p}\n    metrics_path: /{p}/metrics\n    static_configs:\n"
                       f"      - targets: ['127.0.0.1:{page_port}']\n" for p in PAGES)
        (work / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {interval:g}s\n  scrape_timeout: {interval:g}s\nscrape_configs:\n{jobs}")
        procs.append(subprocess.Popen([str(PROMETHEUS), f"--config.file={work / 'prometheus.yml'}",
                                       f"--storage.tsdb.path={work / 'tsdb'}", "--log.level=warn",
                                       f"--web.listen-address=127.0.0.1:{prom_port}"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for(lambda: up(prom_port), "Prometheus' first scrape of both pages", 60)
        load_start = os.getloadavg()[0]
        prom_at = prometheus_phases(prom_port, interval)
        # each page's sidecar in its own process, as one sidecar per engine is (the 1.27 MB page's 5 ms of
        # allocations in the same process left the small page's next cycle to fault its memory in again: its
        # fetch read 0.84-0.86 ms beside it, 0.62 ms alone), each started on a phase of its own between
        # Prometheus' scrapes: the page server is one Python process (one GIL), so overlapping cycles slow both
        taken = list(prom_at)
        start_at: dict[str, float] = {}
        base = time.time() + 3.0  # the children's imports
        for p in PAGES:
            phase = quiet_phase(taken, interval)
            taken.append(phase)
            start_at[p] = base + (phase - base) % interval
        children = {p: subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--sidecar", p, "--port", str(page_port), "--seconds",
             str(seconds), "--interval", str(interval), "--start-at", repr(start_at[p])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for p in PAGES}
        procs.extend(children.values())
        measured = {p: json.loads(c.stdout.readline()) for p, c in children.items()}  # type: ignore[union-attr]
        t_start = min(m["t_start"] for m in measured.values())
        t_end = max(m["t_end"] for m in measured.values())
        window = int(t_end - t_start) + 1
        out = {"interval_seconds": interval, "seconds": round(t_end - t_start, 1), "pages": [],
               "capture_advancing": not static,
               "prometheus_phases_seconds": [round(x, 4) for x in prom_at],
               "sidecar_phases_seconds": {p: round(start_at[p] % interval, 4) for p in PAGES},
               "load_average_1m_start": load_start, "commit": commit()}
        medians = {}
        for p in PAGES:
            med = prom_query(prom_port, f'quantile_over_time(0.5, scrape_duration_seconds{{job="{p}"}}[{window}s])',
                             t_end)
            cnt = prom_query(prom_port, f'count_over_time(scrape_duration_seconds{{job="{p}"}}[{window}s])', t_end)
            medians[p] = (float(med[0]["value"][1]) if med else float("nan"), int(float(cnt[0]["value"][1])) if cnt else 0)
        for c in children.values():  # Prometheus' window is read: now prometheus_client's parser, in each child
            c.stdin.write("go\n")  # type: ignore[union-attr]
            c.stdin.flush()  # type: ignore[union-attr]
        results = {p: json.loads(c.stdout.readline()) for p, c in children.items()}  # type: ignore[union-attr]
        for c in children.values():
            c.wait(timeout=30)
        sizes = {p: len(body) for p, body in page_texts().items()}  # the 1.27 MB page is made once, not per row
        for p in PAGES:
            theirs, count = medians[p]
            ours, phases, reference = results[p]["ours"], results[p]["phases"], results[p]["reference"]
            mine = statistics.median(ours)
            parse_derive = statistics.median(x[1] + x[2] for x in phases)
            ref = statistics.median(reference)
            out["pages"].append({
                "page": p, "page_bytes": sizes[p],
                "prometheus_scrape_duration_median_seconds": theirs,
                "prometheus_scrapes": count,
                "specgate_fetch_parse_derive_median_seconds": mine, "specgate_scrapes": len(ours),
                "specgate_fetch_median_seconds": statistics.median(x[0] for x in phases),
                "specgate_parse_median_seconds": statistics.median(x[1] for x in phases),
                "specgate_derive_median_seconds": statistics.median(x[2] for x in phases),
                "specgate_parse_derive_median_seconds": parse_derive,
                "prometheus_client_parse_median_seconds": ref, "prometheus_client_parses": len(reference),
                "prometheus_client_over_specgate_parse_derive": ref / parse_derive,
                "load_average_1m": os.getloadavg()[0],
                "specgate_over_prometheus": mine / theirs if theirs == theirs and theirs > 0 else None})
        return out
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


def prometheus_phases(port: int, interval: float) -> list[float]:
    """When in each interval Prometheus scrapes each page (its last scrape's start, `timestamp(up)`, modulo the
    interval): Prometheus keeps a target's offset for as long as it runs."""
    return [float(prom_query(port, f'timestamp(up{{job="{p}"}})')[0]["value"][1]) % interval for p in PAGES]


def quiet_phase(taken: list[float], interval: float) -> float:
    """The middle of the longest stretch of the interval between Prometheus' scrape starts (wall-clock seconds
    modulo the interval): where our cycle of both pages is farthest from theirs."""
    at = sorted(taken)
    gaps = [((at[(i + 1) % len(at)] - a) % interval or interval, a) for i, a in enumerate(at)]
    length, start = max(gaps)
    return (start + length / 2) % interval


def sidecar(page: str, port: int, seconds: float, interval: float, start_at: float) -> None:
    """One page's sidecar (child process): from wall-clock `start_at`, every `interval` for `seconds`, what the
    sidecar does per scrape — fetch (`Scraper.fetch`), parse + normalise (`Scraper.snapshot_from_page`), derive
    (`ExporterState.record_success`) — each timed; one JSON line with the window's wall-clock ends, then, after a
    line on stdin (the parent has read Prometheus' medians), prometheus_client's parser on the page as fetched as
    many times at the same interval, and one JSON line with all the times."""
    scraper = Scraper(f"http://127.0.0.1:{port}/{page}", engine="vllm", timeout=interval)
    state = ExporterState.from_settings(ExporterSettings(), started_at=0.0)
    ours: list[float] = []
    phases: list[tuple[float, float, float]] = []
    time.sleep(max(0.0, start_at - time.time()))
    next_at = time.monotonic()
    t_start = time.time()
    while not ours or time.time() - t_start <= seconds:
        t0 = time.perf_counter()
        raw = scraper.fetch()
        t1 = time.perf_counter()
        snap = scraper.snapshot_from_page(raw, time.time())
        t2 = time.perf_counter()
        state.record_success(snap, 0.0)
        t3 = time.perf_counter()
        ours.append(t3 - t0)
        phases.append((t1 - t0, t2 - t1, t3 - t2))
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    print(json.dumps({"t_start": t_start, "t_end": time.time()}), flush=True)
    sys.stdin.readline()
    reference: list[float] = []
    next_at = time.monotonic()
    for _ in ours:
        text = scraper.fetch().decode("utf-8", errors="replace")
        t0 = time.perf_counter()
        reference_parse(text)
        reference.append(time.perf_counter() - t0)
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    scraper.close()
    print(json.dumps({"ours": ours, "phases": phases, "reference": reference}), flush=True)


def commit() -> str | None:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                       check=False)
    return r.stdout.strip() or None


def write(result: dict) -> Path:
    """Store `result` under "side_by_side" in the curve's JSON (docs/scale-exporter.json), keeping its points."""
    path = CURVE_PNG.with_suffix(".json")
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc["side_by_side"] = dict(result, date=time.strftime("%Y-%m-%d"))
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--seconds", type=float, default=30.0, help="how long both scrape (default 30)")
    ap.add_argument("--json", action="store_true", help="one JSON object")
    ap.add_argument("--write", action="store_true", help="store the result in docs/scale-exporter.json")
    ap.add_argument("--static", action="store_true", help="serve the capture as it is (zero deltas), not advancing")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--advancing", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--sidecar", choices=PAGES, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--interval", type=float, default=1.0, help=argparse.SUPPRESS)
    ap.add_argument("--start-at", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve, args.advancing)
        return 0
    if args.sidecar:
        sidecar(args.sidecar, args.port, args.seconds, args.interval, args.start_at)
        return 0
    if not PROMETHEUS.exists():
        print(f"{PROMETHEUS} is missing: run `make tools` first", file=sys.stderr)
        return 1
    result = run(args.seconds, static=args.static)
    if args.write:
        write(result)
    if args.json:
        print(json.dumps({"side_by_side": result}))
    else:
        for r in result["pages"]:
            print(f"{r['page']:10} {r['page_bytes']:>9} B  Prometheus scrape_duration_seconds median "
                  f"{r['prometheus_scrape_duration_median_seconds'] * 1e3:7.3f} ms ({r['prometheus_scrapes']} scrapes)  "
                  f"specgate fetch+parse+derive median {r['specgate_fetch_parse_derive_median_seconds'] * 1e3:7.3f} ms "
                  f"({r['specgate_scrapes']}: fetch {r['specgate_fetch_median_seconds'] * 1e3:.3f}, parse "
                  f"{r['specgate_parse_median_seconds'] * 1e3:.3f}, derive {r['specgate_derive_median_seconds'] * 1e3:.3f})"
                  f"  ratio {r['specgate_over_prometheus']:.2f}; prometheus_client's parser median "
                  f"{r['prometheus_client_parse_median_seconds'] * 1e3:.3f} ms, "
                  f"{r['prometheus_client_over_specgate_parse_derive']:.1f}x our parse+derive  (load average "
                  f"{result['load_average_1m_start']:.1f} at the start, {r['load_average_1m']:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
