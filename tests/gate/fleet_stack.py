"""A synthetic fleet in two real metrics engines: Prometheus 2.42 (backfilled) and VictoriaMetrics 1.79 (imported).

Used by tests/gate/evidence/test_fleet.py and bench/fleet.py. The fleet is shaped like the real captures
(tests/fixtures/vllm, tests/golden/vllm-*.prom): per-stream series carry `model`, `engine="vllm"`,
`rank="0"`; the scrape config adds `namespace`, `pod`, `job` and a `drafter_revision` relabelled from
the pod (the exporter never sets those). Each pod drafts ~40-120 verify rounds per second at k = 3
(draft tokens = 3 x drafts, as vLLM counts a fixed-depth drafter) and accepts L ~ 2.9-3.4 (the real
ngram arm: 3.24), with per-sample noise; some pods restart once (their restarts counter steps, the
spec counters stay monotonic as the exporter keeps them); `bad` pods accept L ~ 1.6, below a 2.0
target. Only the families the fleet verdict reads are written (`FAMILIES`). Every value is a pure
function of (seed, pod, step), so both backends hold the same numbers.

Prometheus gets OpenMetrics text through `promtool tsdb create-blocks-from openmetrics` and then
serves the blocks; VictoriaMetrics gets Prometheus text with millisecond timestamps on
`/api/v1/import/prometheus` (`-search.latencyOffset=1s` so fresh samples show, `-search.disableCache`
so a repeated query is computed again, `/internal/force_flush` so imported data is searchable at once).
Both listen on 127.0.0.1, keep data in a temp dir and are stopped by their own PID.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import requests

from exporter import names

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / ".tools" / "bin"
FAMILIES = (names.SPEC_DRAFTS, names.SPEC_ACCEPTED, names.SPEC_DRAFT_TOKENS, names.ENGINE_RESTARTS, names.ENGINE_UP)
MODELS = ("Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct")
K = 3
BAD_L = 1.6


def tool(name: str) -> Path:
    found = shutil.which(name) or (str(TOOLS / name) if (TOOLS / name).exists() else None)
    if not found:
        raise FileNotFoundError(f"{name} not found on PATH or in .tools/bin (make tools)")
    return Path(found)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class FleetSpec:
    """N pods x `seconds` of history at `step`, ending at `end` (a multiple of 60)."""

    pods: int
    end: int
    seconds: int = 6 * 3600
    step: int = 30
    bad: tuple[int, ...] = ()
    silent: tuple[int, ...] = ()  # pods whose sidecar is scraped (engine_up) but that drafted nothing
    seed: int = 16

    @property
    def start(self) -> int:
        return self.end - self.seconds

    def pod(self, i: int) -> str:
        return f"vllm-{i:05d}"

    def labels(self, i: int, stream: bool = True) -> str:
        base = f'namespace="llm",pod="{self.pod(i)}",job="specgate",drafter_revision="r{i % 2}"'
        if not stream:
            return base + ',engine="vllm"'
        return base + f',model="{MODELS[i % len(MODELS)]}",engine="vllm",rank="0"'

    def restart_step(self, i: int) -> int | None:
        """Pods i with i % 37 == 5 restart once, within the last hour of the history."""
        n = self.seconds // self.step
        return n - 5 - (i * 7) % max(min(n // 2, 3600 // self.step) - 10, 1) if i % 37 == 5 else None

    def counters(self, i: int) -> tuple[list[int], list[int], list[int], list[int]]:
        """Cumulative drafts, accepted, draft tokens and restarts at every step of pod i."""
        rng = random.Random(self.seed * 1_000_003 + i)
        rate = rng.uniform(40, 120) * self.step
        base_l = BAD_L if i in self.bad else rng.uniform(2.9, 3.4)
        n = self.seconds // self.step
        restart_at = self.restart_step(i)
        d = a = r = 0
        ds, acc, tok, rs = [], [], [], []
        silent = i in self.silent
        for s in range(n + 1):
            if s and not silent:
                dd = int(rate * rng.uniform(0.8, 1.2))
                d += dd
                a += int(dd * (base_l - 1.0 + rng.uniform(-0.1, 0.1)))
            if s == restart_at:
                r += 1
            ds.append(d)
            acc.append(a)
            tok.append(K * d)
            rs.append(r)
        return ds, acc, tok, rs

    def lines(self, fmt: str, pods: range | None = None) -> Iterator[str]:
        """Sample lines, family by family: fmt "openmetrics" (seconds, `# TYPE`, `# EOF`) or "prometheus" (ms)."""
        pods = pods if pods is not None else range(self.pods)
        om = fmt == "openmetrics"
        times = [str(self.start + s * self.step) + ("" if om else "000") for s in range(self.seconds // self.step + 1)]
        for j, fam in enumerate(FAMILIES):
            if om:
                yield f"# TYPE {fam.name} {fam.kind}\n"
            for i in pods:
                if fam is names.ENGINE_UP:
                    prefix = f"{fam.series}{{{self.labels(i, stream=False)}}} 1 "
                    yield "".join(prefix + t + "\n" for t in times)
                    continue
                if i in self.silent:
                    continue
                values = self.counters(i)[j]
                prefix = f"{fam.series}{{{self.labels(i)}}} "
                yield "".join(f"{prefix}{v} {t}\n" for v, t in zip(values, times, strict=True))
        if om:
            yield "# EOF\n"


@dataclass
class Server:
    name: str
    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    extra: dict[str, float] = field(default_factory=dict)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def peak_rss_mib(self) -> float | None:
        """The server's peak resident memory (VmHWM), while it runs."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None


def _wait_ready(server: Server, path: str, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            if requests.get(server.url + path, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        if server.proc.poll() is not None or time.time() > deadline:
            tail = server.log.read_text(errors="replace")[-2000:] if server.log.exists() else ""
            server.stop()
            raise RuntimeError(f"{server.name} did not become ready:\n{tail}")
        time.sleep(0.2)


def prometheus(spec: FleetSpec, workdir: Path) -> Server:
    """Backfill the fleet with promtool, then serve the blocks with a real Prometheus."""
    workdir.mkdir(parents=True, exist_ok=True)
    om = workdir / "fleet.om"
    with om.open("w") as f:
        f.writelines(spec.lines("openmetrics"))
    data = workdir / "data"
    subprocess.run([str(tool("promtool")), "tsdb", "create-blocks-from", "openmetrics", "-q", str(om), str(data)],
                   check=True, capture_output=True)
    om.unlink()
    (workdir / "prometheus.yml").write_text("global:\n  scrape_interval: 1h\n")
    port = free_port()
    log = workdir / "prometheus.log"
    with log.open("w") as fh:
        # 2h blocks as promtool wrote them, no background compaction: at 5,000 pods merging them into 6h blocks
        # took minutes of the shared CPUs and landed on the verdict being timed.
        proc = subprocess.Popen([str(tool("prometheus")), f"--config.file={workdir / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={data}", f"--web.listen-address=127.0.0.1:{port}",
                                 "--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h"],
                                stdout=fh, stderr=subprocess.STDOUT)
    server = Server("prometheus", f"http://127.0.0.1:{port}", proc, log)
    _wait_ready(server, "/-/ready")
    return server


def victoriametrics(spec: FleetSpec, workdir: Path, chunk_pods: int = 100) -> Server:
    """Start a real VictoriaMetrics and import the fleet through /api/v1/import/prometheus."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = workdir / "victoria-metrics.log"
    with log.open("w") as fh:
        proc = subprocess.Popen([str(tool("victoria-metrics")), f"-storageDataPath={workdir / 'data'}",
                                 f"-httpListenAddr=127.0.0.1:{port}", "-search.latencyOffset=1s",
                                 "-search.disableCache", "-retentionPeriod=100y", "-loggerLevel=ERROR"],
                                stdout=fh, stderr=subprocess.STDOUT)
    server = Server("victoriametrics", f"http://127.0.0.1:{port}", proc, log)
    _wait_ready(server, "/health")
    try:
        with requests.Session() as s:
            for lo in range(0, spec.pods, chunk_pods):
                body = "".join(spec.lines("prometheus", range(lo, min(lo + chunk_pods, spec.pods)))).encode()
                r = s.post(server.url + "/api/v1/import/prometheus", data=body, timeout=300)
                r.raise_for_status()
            s.get(server.url + "/internal/force_flush", timeout=60).raise_for_status()
    except Exception:
        server.stop()
        raise
    return server
