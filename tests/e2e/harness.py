"""The engine-agnostic end-to-end harness: processes, pages, the exporter, and one arm under test.

A small library, not a test module: `tools/refresh_captures.py`, `tools/refresh_sglang_captures.py`
and `tools/demo_vllm.py` use it too. What differs between engines is a small description
(`Engine`: how to launch an arm, read its counters and send its traffic), written once per engine
in `vllm_live.py` and `sglang_live.py`; everything here runs the same for both:

- processes: every process it starts runs in its own session (process group id = its PID) and is
  stopped by that PID (`EngineProcess.stop`, `ExporterProcess.stop`), also when a caller fails:
  use them as context managers or call `stop()` in a `finally`/fixture finalizer;
- pages: Prometheus text read with prometheus_client's own parser (independent of the exporter's);
- one arm under test (`bring_up`, `run_measured_traffic`, `arm_fixture`): the exporter in front of a
  real engine, bounded traffic, and the exporter's page read at a moment when its sliding window is
  known to hold exactly that traffic.

Why the timing matters (and how it is made exact rather than approximate): the exporter's
`specgate_spec_acceptance_length{window=W}` is the delta between its newest snapshot and the
newest snapshot at least W older. If the page is read after the traffic ended (the exporter's
own totals already equal the engine's counters) and before `t0 + W` (so the window's start
snapshot was taken before the first request), the gauge is 1 + Δaccepted / Δdrafts over exactly
the traffic, which the test reads from the engine's own /metrics before and after. The exporter
is started before the engine so that it sees the engine's start (`specgate_engine_ready_seconds`).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

REPO = Path(__file__).resolve().parents[2]
BUILD_MODELS_SCRIPT = REPO / "tools" / "build_tiny_models.py"
SPECGATE = REPO / ".venv" / "bin" / "specgate"
SERVED_MODEL_NAME = "tiny"  # --served-model-name on every engine

# Repetitive prompts, so ngram prompt lookup has something to find; all well under 512 tokens.
PROMPTS: tuple[str, ...] = (
    "the quick brown fox the quick brown fox the quick brown fox jumps over the lazy dog",
    "one two three four five one two three four five one two three four five",
    "draft target token accept reject draft target token accept reject draft target",
    "the number 7 is followed by 8. the number 8 is followed by 9. the number 9 is",
)

# The exporter in front of every arm: scraped each second, 5 s batch windows, an L target of 2.
BATCH_WINDOW_SECONDS = 5
SCRAPE_INTERVAL_SECONDS = 1
SLO_TARGET = 2.0
PRE_TRAFFIC_IDLE_SECONDS = 8.0  # the window's start snapshot must be older than the first request

Samples = dict[str, list[tuple[dict[str, str], float]]]


def log(msg: str) -> None:
    """Progress on stderr (pytest shows it with -s; tools always)."""
    print(f"[e2e] {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    """The user's cache directory for specgate (same rule as tools/vllm_cpu.sh)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "specgate"


def free_port() -> int:
    """A free ephemeral loopback port (something else may hold the common ones)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_engine_python(script: Path) -> Path:
    """Run an engine's installer (tools/vllm_cpu.sh, tools/sglang_cpu.sh: idempotent, cached); its venv's python."""
    out = subprocess.run(["bash", str(script)], check=True, stdout=subprocess.PIPE, text=True)
    py = Path(out.stdout.strip().splitlines()[-1])
    if not py.is_file():
        raise RuntimeError(f"{script.relative_to(REPO)} did not produce a python: {py}")
    return py


def models_dir() -> Path:
    """Where the tiny models are cached: keyed by the build script's content, so edits rebuild."""
    digest = hashlib.sha256(BUILD_MODELS_SCRIPT.read_bytes()).hexdigest()[:12]
    return cache_root() / f"tiny-models-{digest}"


def ensure_models(python: Path, outdir: Path | None = None) -> Path:
    """Build the tiny models into OUTDIR with an engine venv's python (the build needs torch)."""
    outdir = outdir or models_dir()
    subprocess.run([str(python), str(BUILD_MODELS_SCRIPT), str(outdir)], check=True,
                   env=_engine_env(), stdout=sys.stderr)
    return outdir


def _engine_env() -> dict[str, str]:
    """No hub, no telemetry, no variable that would override the flags we pass."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "VLLM_CPU_KVCACHE_SPACE", "PYTHONHOME")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
               PYTHONUNBUFFERED="1")
    return env


def _children_of(pid: int) -> list[int]:
    """All descendants of `pid` (from /proc), so none survives if it left our process group."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _die_with_parent() -> None:
    """Child-side (preexec): get SIGTERM if the test process itself is killed, so no server outlives it.

    The normal path is still `stop()` by PID; this only covers a SIGKILLed pytest/tool.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stop_group(popen: subprocess.Popen, grace: float) -> None:
    """SIGTERM the process group led by popen.pid, then SIGKILL it and any stray descendant, by PID."""
    pid = popen.pid
    if popen.poll() is None or _children_of(pid):
        descendants = _children_of(pid)
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 5
        while any(_alive(p) for p in descendants) and time.monotonic() < deadline:
            time.sleep(0.2)
        for p in [pid, *descendants]:
            if _alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    popen.wait(timeout=30)


class PortTaken(RuntimeError):
    """The engine could not bind the port `free_port` gave it: another process took the port between the probe and
    the engine's bind (SGLang starts its own helper processes first, which bind ports of their own). Seen in a full
    `make e2e` run: uvicorn logged Errno 98, the server process stayed up, and the arm waited its whole ready timeout."""


BIND_FAILED = "address already in use"


@dataclass
class EngineProcess:
    """One running engine server (its whole process tree): vllm_live.VLLMProcess, sglang_live.SGLangProcess.

    What is common to both engines: the OpenAI /v1/completions API (readiness probe, traffic),
    /health, /metrics, and stopping by PID. `counters()` is each engine's own reading of its page.
    """

    arm: str
    port: int
    model_dir: Path
    log_path: Path
    popen: subprocess.Popen
    launched_at: float  # time.monotonic() just before the launch
    launched_wall: float  # time.time() just before the launch
    enforce_eager: bool
    ready_seconds: float | None = None  # launch -> first completion that succeeded
    health_seconds: float | None = None  # launch -> first /health 200
    _session: requests.Session = field(default_factory=requests.Session, repr=False)
    engine_name: str = "engine"  # in messages only ("vLLM", "SGLang")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def bind_failed(self) -> bool:
        """Whether the engine's log says it could not bind its port (the last 64 KB: the bind is logged at start)."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(max(f.seek(0, os.SEEK_END) - 65536, 0))
                return BIND_FAILED in f.read().decode(errors="replace")
        except OSError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def wait_ready(self, timeout: float = 300.0, progress_every: float = 10.0, probe_completion: bool = True) -> float:
        """Wait until a completion succeeds; returns (and records) launch -> ready seconds.

        /health answering is not "ready" for a user: startup staging counts until the first
        request is served, so the probe is a one-token completion. `probe_completion=False`
        stops at /health (captures that must hold only the traffic the caller sends).
        """
        deadline = self.launched_at + timeout
        next_progress = time.monotonic() + progress_every
        while True:
            now = time.monotonic()
            if self.health_seconds is None and self.bind_failed():
                raise PortTaken(f"{self.engine_name} ({self.arm}) could not bind :{self.port}; log {self.log_path}")
            if not self.alive():
                raise RuntimeError(f"{self.engine_name} ({self.arm}) exited with {self.popen.returncode} before it was ready; "
                                   f"log {self.log_path}:\n{self.log_tail()}")
            if now > deadline:
                raise TimeoutError(f"{self.engine_name} ({self.arm}) not ready after {timeout:.0f} s; log {self.log_path}:\n"
                                   f"{self.log_tail()}")
            if now >= next_progress:
                log(f"{self.arm}: waiting for {self.engine_name} on :{self.port} ({now - self.launched_at:.0f} s)")
                next_progress = now + progress_every
            try:
                if self.health_seconds is None:
                    r = self._session.get(f"{self.url}/health", timeout=2)
                    if r.status_code != 200:
                        raise requests.ConnectionError(f"health {r.status_code}")
                    self.health_seconds = time.monotonic() - self.launched_at
                if probe_completion:
                    self.complete(PROMPTS[0], max_tokens=1, timeout=30)
            except (requests.ConnectionError, requests.Timeout, requests.HTTPError):
                time.sleep(0.5)
                continue
            if not probe_completion:
                log(f"{self.arm}: /health ok in {self.health_seconds:.1f} s, pid {self.pid}, port {self.port}")
                return self.health_seconds
            self.ready_seconds = time.monotonic() - self.launched_at
            log(f"{self.arm}: ready in {self.ready_seconds:.1f} s (health {self.health_seconds:.1f} s), "
                f"pid {self.pid}, port {self.port}")
            return self.ready_seconds

    def complete(self, prompt: str, max_tokens: int, timeout: float = 120.0, ignore_eos: bool = True) -> dict:
        """One /v1/completions request, temperature 0 (greedy: deterministic counters)."""
        body = {"model": SERVED_MODEL_NAME, "prompt": prompt, "max_tokens": max_tokens,
                "temperature": 0, "ignore_eos": ignore_eos}
        r = self._session.post(f"{self.url}/v1/completions", json=body, timeout=timeout)
        r.raise_for_status()
        return r.json()

    def send_traffic(self, n: int, max_tokens: int, concurrency: int = 4,
                     prompts: Sequence[str] = PROMPTS, responses: list[dict] | None = None) -> int:
        """n bounded completions (temperature 0, ignore_eos), `concurrency` at a time.

        Returns the completion tokens served; raises if any request failed. `responses`, if given,
        receives every response body in request order (per-request metrics live there).
        """
        def one(i: int) -> dict:
            with requests.Session() as s:
                body = {"model": SERVED_MODEL_NAME, "prompt": prompts[i % len(prompts)], "max_tokens": max_tokens,
                        "temperature": 0, "ignore_eos": True}
                r = s.post(f"{self.url}/v1/completions", json=body, timeout=300)
                r.raise_for_status()
                return r.json()

        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            bodies = list(pool.map(one, range(n)))
        if responses is not None:
            responses.extend(bodies)
        return sum(int(b["usage"]["completion_tokens"]) for b in bodies)

    def metrics_text(self, timeout: float = 10.0) -> str:
        """The engine's own /metrics, classic text format (what the exporter also asks for)."""
        r = self._session.get(f"{self.url}/metrics", timeout=timeout,
                              headers={"Accept": "text/plain; version=0.0.4"})
        r.raise_for_status()
        return r.text

    def counters(self) -> Any:
        """The engine's counters as the tests read them (vllm_live.EngineCounters, sglang_live.SGLangCounters)."""
        raise NotImplementedError(f"{type(self).__name__} reads no counters")

    def kill_hard(self) -> None:
        """Simulate a crash: SIGKILL the whole process group at once (by the leader's PID)."""
        descendants = _children_of(self.pid)
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for p in descendants:
            if _alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.popen.wait(timeout=30)

    def stop(self, grace: float = 20.0) -> None:
        """Stop the server and every process it started (by PID); safe to call twice."""
        self._session.close()
        _stop_group(self.popen, grace)

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()



# --- reading Prometheus text (engine and exporter pages) -------------------------------------

Labels = tuple[tuple[str, str], ...]


def parse_samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """name -> [(labels, value)] from Prometheus text, using prometheus_client's own parser.

    Independent of the exporter's parser on purpose: the tests check the exporter against it.
    """
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((dict(s.labels), float(s.value)))
    return out


def sample_value(samples: Mapping[str, list[tuple[dict[str, str], float]]], name: str,
                 **labels: str) -> float | None:
    """The one sample of `name` whose labels include `labels`; None if absent, error if several."""
    hits = [v for lab, v in samples.get(name, []) if all(lab.get(k) == val for k, val in labels.items())]
    if len(hits) > 1:
        raise AssertionError(f"{name}{labels} matches {len(hits)} series")
    return hits[0] if hits else None



# --- the exporter sidecar --------------------------------------------------------------------

@dataclass
class ExporterProcess:
    """`specgate exporter run` against one engine URL, on its own loopback port."""

    engine_url: str
    port: int
    log_path: Path
    popen: subprocess.Popen
    _session: requests.Session = field(default_factory=requests.Session, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def metrics_text(self, timeout: float = 5.0) -> str:
        r = self._session.get(f"{self.url}/metrics", timeout=timeout)
        r.raise_for_status()
        return r.text

    def samples(self) -> dict[str, list[tuple[dict[str, str], float]]]:
        return parse_samples(self.metrics_text())

    def wait_serving(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.popen.poll() is not None:
                raise RuntimeError(f"exporter exited with {self.popen.returncode}:\n{self.log_tail()}")
            try:
                self.metrics_text(timeout=2)
                return
            except requests.RequestException:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"exporter not serving after {timeout} s:\n{self.log_tail()}") from None
                time.sleep(0.2)

    def wait_for(self, predicate, timeout: float, what: str, interval: float = 0.5):
        """Poll the exporter's page until predicate(samples) is truthy; returns that value."""
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                last = predicate(self.samples())
            except requests.RequestException as e:
                last = e
            else:
                if last:
                    return last
            time.sleep(interval)
        raise TimeoutError(f"exporter: {what} not seen within {timeout} s (last: {last!r})\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, grace: float = 10.0) -> None:
        self._session.close()
        _stop_group(self.popen, grace)

    def __enter__(self) -> ExporterProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_exporter(engine_url: str, log_dir: Path, scrape_interval: float = 1.0, batch_window: float = 5.0,
                   min_drafts: int = 1, extra_args: Sequence[str] = ()) -> ExporterProcess:
    """Launch the project's exporter sidecar (the .venv console script) on a free loopback port."""
    port = free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"exporter-{port}.log"
    cmd = [str(SPECGATE), "exporter", "run", "--engine-url", engine_url, "--listen", f"127.0.0.1:{port}",
           "--scrape-interval", str(scrape_interval), "--batch-window", str(batch_window),
           "--min-drafts", str(min_drafts), *extra_args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECGATE_")}
    with log_path.open("wb") as fh:
        popen = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=env, start_new_session=True, preexec_fn=_die_with_parent)
    exp = ExporterProcess(engine_url=engine_url, port=port, log_path=log_path, popen=popen)
    try:
        exp.wait_serving()
    except BaseException:
        exp.stop()
        raise
    return exp


# --- the specgate CLI on a plan ----------------------------------------------------------------

def write_plan(path: Path, plan: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


@dataclass(frozen=True)
class CliResult:
    code: int
    doc: dict[str, Any] | None
    stderr: str


def specgate_json(*args: str, timeout: float = 120.0) -> CliResult:
    """Run `specgate ARGS --format json`; stdout must hold only the JSON document."""
    p = subprocess.run([str(SPECGATE), *args, "--format", "json"], capture_output=True, text=True, timeout=timeout)
    doc = json.loads(p.stdout) if p.stdout.strip() else None
    return CliResult(p.returncode, doc, p.stderr)


def run_check(plan: Path, phase: str, metrics_url: str | None, row: dict[str, Any]) -> dict[str, Any]:
    """`specgate check --phase PHASE [--metrics URL]`: a decision, its exit code, recorded in `row`."""
    args = ["check", "--plan", str(plan), "--phase", phase]
    if metrics_url is not None:
        args += ["--metrics", metrics_url]
    res = specgate_json(*args)
    assert res.code in (0, 1, 2), res.stderr
    doc = res.doc
    assert doc is not None and doc["phase"] == phase, res.stderr
    assert res.code == {"pass": 0, "fail": 1, "inconclusive": 2}[doc["decision"]]
    row.update({f"gate_{phase}_decision": doc["decision"],
                f"gate_{phase}_lines": {k: v["status"] for k, v in doc["checks"].items()}})
    return doc


# --- one arm under test: an engine, the exporter in front of it, bounded traffic ----------------

@dataclass(frozen=True)
class Engine:
    """What the harness needs to know about one engine (vllm_live.VLLM, sglang_live.SGLANG).

    The arm flow below is the same for every engine; these fields are where engines differ.
    """

    name: str  # "vllm", "sglang"
    record_prefix: str  # the e2e summary's row key is record_prefix + arm
    python_fixture: str  # the conftest fixtures giving the engine's venv python and the tiny models
    models_fixture: str
    # launch(arm, model_dir, *, python, log_dir, port, **launch) -> a started (not yet ready) EngineProcess
    launch: Callable[..., EngineProcess]
    # traffic(engine) -> (completion tokens, every response body in request order)
    traffic: Callable[[EngineProcess], tuple[int, list[dict[str, Any]]]]
    # acceptance(before, after) -> {"drafts", "accepted", "L", "rate", ...} by the engine's own definitions
    acceptance: Callable[[Any, Any], dict[str, Any] | None]
    window_seconds: int  # the exporter's sliding window: the traffic must fit inside it
    ready_timeout: float
    # The engine's page says when its counters started (process_start_time_seconds): the exporter's
    # totals then equal the engine's counters. Without it (SGLang) the exporter counts from its first
    # scrape, and the tests compare how both grew over the traffic (LiveArm.exporter_before).
    counts_from_zero: bool
    # The engine's counters may still move a moment after a request ended (SGLang): wait until two
    # readings 2 s apart agree before the measured traffic.
    settles_late: bool = False
    after_traffic: Callable[[LiveArm], None] | None = None  # more readings right after the traffic
    # arm -> extra launch keywords (engine flags), and fixtures whose dict value is the engine's extra environment
    arm_launch: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    arm_env_fixture: Mapping[str, str] = field(default_factory=dict)
    # called with the pytest request once an arm is measured (e.g. to share its greedy outputs)
    on_measured: Callable[[Any, LiveArm], None] | None = None

    @property
    def window_label(self) -> str:
        return f"{self.window_seconds}s"


@dataclass
class Traffic:
    """Bounded traffic and the engine's own counters around it (read while the engine was idle)."""

    before: Any  # the engine's counters (vllm_live.EngineCounters, sglang_live.SGLangCounters)
    after: Any
    t0: float  # time.time() just before the first request
    t1: float  # time.time() just after the last answer
    completion_tokens: int
    responses: list[dict[str, Any]] = field(default_factory=list)  # every response body, in request order


@dataclass
class LiveArm:
    """An arm's engine + exporter, and what the test read from them."""

    engine_kind: Engine
    arm: str
    engine: Any  # EngineProcess (the engine's own subclass)
    exporter: ExporterProcess
    traffic: Traffic | None = None
    exporter_before: Samples = field(default_factory=dict)  # the exporter's page just before the traffic
    reading: Samples = field(default_factory=dict)  # the exporter's page inside the exact window
    read_at: float | None = None
    windows_doc: dict[str, Any] = field(default_factory=dict)  # /api/v1/windows after the traffic
    final: Samples = field(default_factory=dict)  # the exporter's page after the last batch window closed
    server_info: dict[str, Any] = field(default_factory=dict)  # SGLang's /server_info after the traffic
    engine_page: str = ""  # the engine's own /metrics after the traffic (SGLang)

    def stop(self) -> None:
        """Stop both processes by PID (exporter last: it must survive the engine)."""
        try:
            self.engine.stop()
        finally:
            self.exporter.stop()


BIND_ATTEMPTS = 3  # launches of one arm when its port was taken before the engine could bind it (PortTaken)


def bring_up(kind: Engine, arm: str, model_dir: Path, python: Path, log_dir: Path,
             ready_timeout: float | None = None, exporter_args: tuple[str, ...] = (), **launch: Any) -> LiveArm:
    """Exporter first (it then sees the engine start), then the engine; both stopped on any failure.

    `launch` goes to the engine's launcher (engine flags and environment, SGLang's pool settings).
    """
    for attempt in range(1, BIND_ATTEMPTS + 1):
        port = free_port()
        exporter = start_exporter(f"http://127.0.0.1:{port}", log_dir, scrape_interval=SCRAPE_INTERVAL_SECONDS,
                                  batch_window=BATCH_WINDOW_SECONDS, min_drafts=1,
                                  extra_args=("--windows", kind.window_label, "--acceptance-slo-target",
                                              str(SLO_TARGET), *exporter_args))
        engine: EngineProcess | None = None
        try:
            engine = kind.launch(arm, model_dir, python=python, log_dir=log_dir, port=port, **launch)
            engine.wait_ready(ready_timeout or kind.ready_timeout)
        except PortTaken as e:
            if engine is not None:
                engine.stop()
            exporter.stop()
            if attempt == BIND_ATTEMPTS:
                raise
            log(f"{arm}: {e}; launching again on another port ({attempt + 1}/{BIND_ATTEMPTS})")
            continue
        except BaseException:
            if engine is not None:
                engine.stop()
            exporter.stop()
            raise
        return LiveArm(engine_kind=kind, arm=engine.arm, engine=engine, exporter=exporter)
    raise AssertionError("unreachable: the last attempt returns or raises")


def engine_up(samples: Samples) -> bool:
    return sample_value(samples, "specgate_engine_up") == 1.0


def run_measured_traffic(live: LiveArm, spec: bool) -> None:
    """Send the bounded traffic and take the exporter reading inside the exact window."""
    kind, exp = live.engine_kind, live.exporter
    exp.wait_for(engine_up, 30, "specgate_engine_up 1")
    if kind.settles_late:
        # Seen on SGLang: one generation token of the readiness probe landing late (EAGLE3 arm). Wait
        # until two readings 2 s apart agree, so the window's start snapshot sees the engine at rest.
        last, quiet_deadline = live.engine.counters(), time.monotonic() + 30
        while time.monotonic() < quiet_deadline:
            time.sleep(2.0)
            now_c = live.engine.counters()
            if now_c == last:
                break
            last = now_c
    up_at = time.time()
    if kind.counts_from_zero:
        time.sleep(PRE_TRAFFIC_IDLE_SECONDS)
        before = live.engine.counters()
    else:
        time.sleep(PRE_TRAFFIC_IDLE_SECONDS - 2 * SCRAPE_INTERVAL_SECONDS)
        before = live.engine.counters()
        # The exporter counts from its first scrape, which may land after the engine's own warm-up request:
        # its totals' change over the traffic is compared, read once it has scraped the idle engine again.
        time.sleep(2 * SCRAPE_INTERVAL_SECONDS + 0.5)
        live.exporter_before = exp.samples()
    t0 = time.time()
    tokens, responses = kind.traffic(live.engine)
    t1 = time.time()
    after = live.engine.counters()
    live.traffic = Traffic(before=before, after=after, t0=t0, t1=t1, completion_tokens=tokens, responses=responses)
    if kind.after_traffic is not None:
        kind.after_traffic(live)
    log(f"{live.arm}: {tokens} tokens in {t1 - t0:.1f} s; engine drafts {before.drafts} -> {after.drafts}")

    if kind.counts_from_zero:
        want_drafts = after.drafts
    else:
        want_drafts = (sample_value(live.exporter_before, "specgate_spec_drafts_total") or 0.0) + \
            (after.drafts or 0.0) - (before.drafts or 0.0)
    deadline = t0 + kind.window_seconds - 0.5
    earliest = max(t1 + 2 * SCRAPE_INTERVAL_SECONDS + 0.5, up_at + kind.window_seconds + 1.0)
    time.sleep(max(0.0, earliest - time.time()))
    while True:
        now = time.time()
        if now >= deadline:
            raise AssertionError(
                f"{live.arm}: no exporter reading inside the exact window (t0 {t0:.1f}, t1 {t1:.1f}, now {now:.1f}); "
                f"the test's timing precondition failed, not a measured value\n{exp.log_tail()}")
        page = exp.samples()
        caught_up = sample_value(page, "specgate_kv_pool_tokens", pool="target") is not None
        if spec:
            caught_up = caught_up and sample_value(page, "specgate_spec_drafts_total") == want_drafts and \
                sample_value(page, "specgate_spec_acceptance_length", window=kind.window_label) is not None
        if caught_up and time.time() < deadline:
            live.reading, live.read_at = page, now
            break
        time.sleep(0.25)

    # Let the batch window that holds the end of the traffic close, then read the history.
    def closed_after_traffic(_: Samples) -> dict[str, Any] | None:
        doc = requests.get(f"{exp.url}/api/v1/windows", timeout=5).json()
        return doc if any(w["end"] >= t1 + 1.0 for w in doc.get("windows", [])) or not spec else None

    if spec:
        live.windows_doc = exp.wait_for(closed_after_traffic, 3 * BATCH_WINDOW_SECONDS + 5,
                                        "a batch window closing after the traffic")
    else:
        time.sleep(BATCH_WINDOW_SECONDS + 1)
        live.windows_doc = requests.get(f"{exp.url}/api/v1/windows", timeout=5).json()
    live.final = exp.samples()


def window_drafts_and_accepted(doc: dict[str, Any]) -> tuple[float, float, int]:
    """Σ drafts, Σ (L − 1)·drafts and the count of non-reset windows with an L in a windows document."""
    drafts = accepted = 0.0
    n = 0
    for w in doc.get("windows", []):
        if w["reset"] or w["acceptance_length"] is None:
            continue
        drafts += w["drafts"]
        accepted += (w["acceptance_length"] - 1.0) * w["drafts"]
        n += 1
    return drafts, accepted, n


def serve_arm(request: Any, kind: Engine, arm: str, log_dir: Path, record: dict, requires: Sequence[str] = (),
              **launch: Any) -> Iterator[LiveArm]:
    """The body of a module-scoped arm fixture: the arm up, measured, recorded, yielded, always stopped by PID.

    `requires` names fixtures to resolve before the server starts (one that starts a server of its own
    must not run beside the arm's). `launch` goes to `bring_up`, after the engine's own per-arm flags
    (`Engine.arm_launch`, `Engine.arm_env_fixture`).
    """
    for name in requires:
        request.getfixturevalue(name)
    python = request.getfixturevalue(kind.python_fixture)
    models = request.getfixturevalue(kind.models_fixture)
    kw: dict[str, Any] = {**kind.arm_launch.get(arm, {}), **launch}
    if arm in kind.arm_env_fixture:
        kw["extra_env"] = request.getfixturevalue(kind.arm_env_fixture[arm])
    lv = bring_up(kind, arm, models, python, log_dir, **kw)
    try:
        run_measured_traffic(lv, spec=arm != "nospec")
        record_arm(record, lv)
        if kind.on_measured is not None:
            kind.on_measured(request, lv)
        yield lv
    finally:
        lv.stop()


def arm_fixture(kind: Engine, arms: str | Sequence[str], requires: Sequence[str] = (), **launch: Any) -> Any:
    """A module-scoped pytest fixture `live`: each arm up once per module (`serve_arm`).

    `arms` is one arm, or several: then the fixture is parametrized by arm (a test narrows it with
    `@pytest.mark.parametrize("live", [...], indirect=True)`), and pytest runs each arm's tests together,
    one server at a time.
    """
    import pytest

    params = None if isinstance(arms, str) else list(arms)

    @pytest.fixture(scope="module", params=params)
    def live(request: pytest.FixtureRequest, e2e_logs: Path, e2e_record: dict) -> Any:
        arm = arms if isinstance(arms, str) else request.param
        yield from serve_arm(request, kind, arm, e2e_logs, e2e_record, requires, **launch)

    return live


def record_row(record: dict, live: LiveArm) -> dict[str, Any]:
    """The arm's row of the session summary (e2e-summary.json, printed at the end of `make e2e`)."""
    return record.setdefault(live.engine_kind.record_prefix + live.arm, {})


def record_arm(record: dict, lv: LiveArm) -> None:
    """Numbers for the session summary (printed at the end of `make e2e`)."""
    t = lv.traffic
    c = t.after if t else None
    acc = lv.engine_kind.acceptance(t.before, t.after) if t else None
    label = lv.engine_kind.window_label
    record_row(record, lv).update({
        "startup_seconds": lv.engine.ready_seconds, "health_seconds": lv.engine.health_seconds,
        "engine_blocks": getattr(c, "num_gpu_blocks", None), "engine_pool_tokens": c.pool_tokens if c else None,
        "exporter_pool_tokens": sample_value(lv.reading, "specgate_kv_pool_tokens", pool="target"),
        "exporter_ready_seconds": sample_value(lv.reading, "specgate_engine_ready_seconds"),
        "L": sample_value(lv.reading, "specgate_spec_acceptance_length", window=label),
        "rate": sample_value(lv.reading, "specgate_spec_acceptance_rate", window=label),
        "engine_L": acc["L"] if acc else None,
        "traffic_tokens": t.completion_tokens if t else None,
        "traffic_drafts": acc["drafts"] if acc else None,
    })
