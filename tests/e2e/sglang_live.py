"""The SGLang engine of the e2e harness: launch an arm of SGLang 0.5.23 (CPU), read its counters, send its traffic.

The engine description `SGLANG` is what `harness.arm_fixture` / `harness.bring_up` run (processes,
the exporter, page parsing and the measured-traffic flow are the harness's, shared with vLLM);
`tools/refresh_sglang_captures.py` uses the launch and counter helpers too. Every server runs in
its own session and is stopped by its PID (`harness.EngineProcess.stop`).

Launch (tools/sglang_launch.py: SGLang's own `launch_server` with specgate's stand-in for its
CPU kernel package, `intel_amx` kept on a CPU without AMX):
`--device cpu --attention-backend intel_amx --enable-metrics --disable-cuda-graph --dtype float32
--context-length 512 --max-running-requests 8 --decode-log-interval 5 --max-total-tokens 8192
--served-model-name tiny`;
arms add `--speculative-algorithm NGRAM --speculative-num-draft-tokens 4`, or
`STANDALONE`/`EAGLE3 --speculative-draft-model-path D --speculative-num-steps 3
--speculative-eagle-topk 1 --speculative-num-draft-tokens 4`.

SGLang's acceptance (its own definitions; docs/design.md "Derived quantities"): one verify
call is one draft round; `spec_verify_calls_total` and `generation_tokens_total` are counted
when a request finishes (with `num_requests_total`), so L is decode-only, vLLM's definition (design.md
"SGLang's L": each request's first token comes from prefill, not from a verify call):
L = (Δgeneration − Δrequests) / Δverify calls and accepted = Δgeneration − Δrequests − Δverify calls.
Per request, `/generate` `meta_info` carries `spec_verify_ct` and SGLang's own
`spec_accept_length` = completion_tokens / spec_verify_ct (prefill token included); the gate's parser
reads (completion_tokens − 1) / spec_verify_ct.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from harness import (
    PROMPTS,
    REPO,
    SERVED_MODEL_NAME,
    Engine,
    EngineProcess,
    LiveArm,
    _die_with_parent,
    _engine_env,
    cache_root,
    ensure_engine_python,
    free_port,
    log,
    parse_samples,
)
from harness import arm_fixture as harness_arm_fixture

SGLANG_CPU_SCRIPT = REPO / "tools" / "sglang_cpu.sh"
LAUNCHER = REPO / "tools" / "sglang_launch.py"
SGLANG_VERSION = "0.5.23"
ARMS: tuple[str, ...] = ("nospec", "ngram", "standalone", "eagle3")
SPECULATIVE_ARMS: tuple[str, ...] = ("ngram", "standalone", "eagle3")
CONTEXT_LENGTH = 512
MAX_RUNNING_REQUESTS = 8
MAX_TOTAL_TOKENS = 8192  # the cap side: binds on every arm of the default launch
# SGLang refreshes its speculation gauges (spec_num_draft_tokens, spec_accept_length) and /server_info's
# avg_spec_accept_length once per decode log interval (default 40 batch steps); the bounded traffic here
# is ~30 steps, so with the default they still read 0 / are absent afterwards (seen on the NGRAM arm).
DECODE_LOG_INTERVAL = 5
NUM_STEPS = 3
EAGLE_TOPK = 1
NUM_DRAFT_TOKENS = 4  # NGRAM: tokens per verify; STANDALONE/EAGLE3: num_steps + 1
# The memory side binds when --max-total-tokens is left out and --mem-fraction-static is small:
# SGLang's KV budget is (free memory after loading) − (free memory before loading) × (1 − m);
# with m 0.05 and ~20 GB free that is ~1 GB, about 650,000 tokens of 1,536 B (STANDALONE).
MEMBOUND_MEM_FRACTION = 0.05

TRAFFIC_REQUESTS = 8
TRAFFIC_MAX_TOKENS = 32
TRAFFIC_CONCURRENCY = 4
# The arm under test (harness.run_measured_traffic): the traffic (~16 s on a quiet 2-core machine) must fit
# inside the exporter's sliding window.
SLIDING_WINDOW_SECONDS = 45
WINDOW_LABEL = f"{SLIDING_WINDOW_SECONDS}s"


def ensure_sglang() -> Path:
    """Install SGLang into its cached venv if needed (tools/sglang_cpu.sh); returns that venv's python."""
    return ensure_engine_python(SGLANG_CPU_SCRIPT)


def launch_args(arm: str, model_dir: Path, port: int, *, max_total_tokens: int | None = MAX_TOTAL_TOKENS,
                mem_fraction_static: float | None = None) -> list[str]:
    """The `sglang.launch_server` flags of an arm (module docstring)."""
    args = ["--model-path", str(model_dir / "target"), "--served-model-name", SERVED_MODEL_NAME,
            "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--attention-backend", "intel_amx",
            "--enable-metrics", "--disable-cuda-graph", "--dtype", "float32",
            "--context-length", str(CONTEXT_LENGTH), "--max-running-requests", str(MAX_RUNNING_REQUESTS),
            "--decode-log-interval", str(DECODE_LOG_INTERVAL)]
    if max_total_tokens is not None:
        args += ["--max-total-tokens", str(max_total_tokens)]
    if mem_fraction_static is not None:
        args += ["--mem-fraction-static", str(mem_fraction_static)]
    if arm == "nospec":
        return args
    if arm == "ngram":
        return args + ["--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", str(NUM_DRAFT_TOKENS)]
    drafts = {"standalone": ("STANDALONE", "draft"), "eagle3": ("EAGLE3", "eagle3-sglang")}
    if arm not in drafts:
        raise ValueError(f"unknown SGLang arm {arm!r}; expected one of {', '.join(ARMS)}")
    algo, d = drafts[arm]
    return args + ["--speculative-algorithm", algo, "--speculative-draft-model-path", str(model_dir / d),
                   "--speculative-num-steps", str(NUM_STEPS), "--speculative-eagle-topk", str(EAGLE_TOPK),
                   "--speculative-num-draft-tokens", str(NUM_DRAFT_TOKENS)]


@dataclass(frozen=True)
class SGLangCounters:
    """What the tests read from SGLang's own /metrics (one model, one rank)."""

    verify_calls: float | None
    generation_tokens: float | None
    prompt_tokens: float | None
    requests: float | None
    max_total_num_tokens: int | None
    num_draft_tokens: float | None
    kv_available_tokens: float | None
    kv_used_tokens: float | None
    context_len: float | None
    kv_cache_memory_gb: float | None
    weight_memory_gb: float | None
    startup_available_gb: float | None

    @classmethod
    def parse(cls, text: str) -> SGLangCounters:
        s = parse_samples(text)

        def one(name: str) -> float | None:
            """One model, one rank: counters are split only by `is_streaming` (summed); a gauge has one series."""
            hits = [v for _, v in s.get("sglang:" + name, [])]
            if not hits:
                return None
            if name.endswith("_total"):
                return sum(hits)
            if len(hits) > 1:
                raise AssertionError(f"sglang:{name}: {len(hits)} series on one model")
            return hits[0]

        pool = one("max_total_num_tokens")
        return cls(verify_calls=one("spec_verify_calls_total"), generation_tokens=one("generation_tokens_total"),
                   prompt_tokens=one("prompt_tokens_total"), requests=one("num_requests_total"),
                   max_total_num_tokens=None if pool is None else int(pool),
                   num_draft_tokens=one("spec_num_draft_tokens"), kv_available_tokens=one("kv_available_tokens"),
                   kv_used_tokens=one("kv_used_tokens"), context_len=one("context_len"),
                   kv_cache_memory_gb=one("kv_cache_memory_usage_gb"), weight_memory_gb=one("weight_memory_usage_gb"),
                   startup_available_gb=one("startup_available_gpu_memory_gb"))

    @property
    def drafts(self) -> float | None:
        """A draft round is one verify call (SGLang's definitions, module docstring)."""
        return self.verify_calls

    @property
    def pool_tokens(self) -> int | None:
        return self.max_total_num_tokens


def acceptance_between(before: SGLangCounters, after: SGLangCounters) -> dict[str, float] | None:
    """L, rate, drafts, accepted from two readings, by SGLang's definitions (module docstring)."""
    if after.verify_calls is None:
        return None
    v = after.verify_calls - (before.verify_calls or 0.0)
    g = (after.generation_tokens or 0.0) - (before.generation_tokens or 0.0)
    if v <= 0 or after.requests is None:
        return None
    # decode-only, vLLM's definition (design.md "SGLang's L"): each finished request's first token came from
    # prefill, not from a verify call, so it is taken out of the accepted tokens
    n = after.requests - (before.requests or 0.0)
    k = after.num_draft_tokens or 0.0
    draft_tokens = v * (k - 1) if k > 1 else None
    accepted = g - n - v
    return {"drafts": v, "generation": g, "requests": n, "accepted": accepted, "L": (g - n) / v,
            "draft_tokens": draft_tokens or 0.0,
            "rate": accepted / draft_tokens if draft_tokens else float("nan")}


@dataclass(frozen=True)
class StartupMemory:
    """The memory figures SGLang logs while it sizes its KV pool (GB = 2^30 bytes, 2 decimals).

    `pre_load_gb`: "Load weight begin. avail mem=" of the first (target) load, the free
    memory before any weight was loaded; `post_load_gb`: the last "Load weight end ... avail
    mem=" (after the drafter's weights too: SGLang counts them before sizing the pool).
    """

    pre_load_gb: float
    post_load_gb: float
    kv_tokens: tuple[int, ...]  # "KV Cache is allocated ... #tokens: N", target first then the drafter

    ROUNDING_GB = 0.005  # each logged figure is rounded to 2 decimals

    def available_bytes(self, mem_fraction_static: float) -> tuple[int, int, int]:
        """(low, logged, high) of SGLang's KV budget: post − pre × (1 − m), within the logs' rounding."""
        gib = 1 << 30
        slack = 1.0 - mem_fraction_static
        mid = self.post_load_gb - self.pre_load_gb * slack
        band = self.ROUNDING_GB * (1.0 + slack)
        return int((mid - band) * gib), int(mid * gib), int((mid + band) * gib)


_BEGIN = re.compile(r"Load weight begin\. avail mem=([0-9.]+) GB")
_END = re.compile(r"Load weight end\..*avail mem=([0-9.]+) GB")
_KV = re.compile(r"KV Cache is allocated\..*#tokens: (\d+)")


def startup_memory(log_text: str) -> StartupMemory:
    begins, ends = _BEGIN.findall(log_text), _END.findall(log_text)
    if not begins or not ends:
        raise AssertionError("SGLang's log has no 'Load weight begin/end ... avail mem=' lines")
    return StartupMemory(pre_load_gb=float(begins[0]), post_load_gb=float(ends[-1]),
                         kv_tokens=tuple(int(x) for x in _KV.findall(log_text)))


@dataclass
class SGLangProcess(EngineProcess):
    """One running SGLang server (its whole process tree), started by `start_sglang`."""

    launch: tuple[str, ...] = ()

    def counters(self) -> SGLangCounters:  # type: ignore[override]
        return SGLangCounters.parse(self.metrics_text())

    def server_info(self, timeout: float = 10.0) -> dict[str, Any]:
        r = self._session.get(f"{self.url}/server_info", timeout=timeout)
        r.raise_for_status()
        return r.json()

    def startup_memory(self) -> StartupMemory:
        return startup_memory(self.log_path.read_text(errors="replace"))

    def generate(self, prompt: str, max_new_tokens: int, timeout: float = 300.0,
                 session: requests.Session | None = None) -> dict[str, Any]:
        """One `/generate`, greedy, ignore_eos: the response holds the text and `meta_info`."""
        body = {"text": prompt, "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0,
                                                    "ignore_eos": True}}
        r = (session or self._session).post(f"{self.url}/generate", json=body, timeout=timeout)
        r.raise_for_status()
        return r.json()

    def generate_traffic(self, n: int, max_new_tokens: int, concurrency: int = TRAFFIC_CONCURRENCY,
                         prompts: Sequence[str] = PROMPTS) -> list[dict[str, Any]]:
        """n bounded `/generate` requests, `concurrency` at a time; the responses in request order."""
        def one(i: int) -> dict[str, Any]:
            with requests.Session() as s:
                out = self.generate(prompts[i % len(prompts)], max_new_tokens, session=s)
                out["prompt"] = prompts[i % len(prompts)]
                return out

        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            return list(pool.map(one, range(n)))


def start_sglang(arm: str, model_dir: Path, python: Path, log_dir: Path | None = None, port: int | None = None,
                 max_total_tokens: int | None = MAX_TOTAL_TOKENS, mem_fraction_static: float | None = None,
                 tag: str = "", extra_args: Sequence[str] = ()) -> SGLangProcess:
    """Launch one arm through tools/sglang_launch.py on 127.0.0.1 (call `wait_ready` next).

    `extra_args` follow the arm's flags (e.g. `--speculative-adaptive` on the EAGLE3 arm).
    """
    port = port or free_port()
    log_dir = log_dir or (cache_root() / "logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    name = arm + (f"-{tag}" if tag else "")
    log_path = log_dir / f"sglang-{name}-{port}-{int(time.time())}.log"
    args = launch_args(arm, model_dir, port, max_total_tokens=max_total_tokens,
                       mem_fraction_static=mem_fraction_static) + list(extra_args)
    cmd = [str(python), str(LAUNCHER), *args]
    with log_path.open("wb") as fh:
        launched_wall = time.time()
        launched_at = time.monotonic()
        popen = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=_engine_env(), start_new_session=True, cwd=str(log_dir),
                                 preexec_fn=_die_with_parent)
    log(f"{name}: launched SGLang pid {popen.pid} on :{port} (log {log_path})")
    return SGLangProcess(arm=name, port=port, model_dir=model_dir, log_path=log_path, popen=popen,
                         launched_at=launched_at, launched_wall=launched_wall, enforce_eager=True,
                         engine_name="SGLang", launch=tuple(args))


def meta_summary(responses: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Σ completion tokens and Σ spec_verify_ct over /generate responses (for the counter cross-check)."""
    metas = [r["meta_info"] for r in responses]
    return {"completion_tokens": sum(int(m["completion_tokens"]) for m in metas),
            "verify_ct": sum(int(m.get("spec_verify_ct") or 0) for m in metas),
            "texts": [r["text"] for r in responses]}


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, default=str)


def send_measured_traffic(engine: EngineProcess) -> tuple[int, list[dict[str, Any]]]:
    """The arm's bounded traffic: 8 `/generate` requests of 32 tokens, 4 at a time (greedy, ignore_eos)."""
    assert isinstance(engine, SGLangProcess)
    responses = engine.generate_traffic(TRAFFIC_REQUESTS, TRAFFIC_MAX_TOKENS)
    return meta_summary(responses)["completion_tokens"], responses


def _read_side(live: LiveArm) -> None:
    """Right after the traffic: the engine's own page and /server_info (the SGLang modules check both)."""
    live.engine_page = live.engine.metrics_text()
    live.server_info = live.engine.server_info()


def greedy_texts(live: LiveArm) -> dict[str, str]:
    """prompt -> greedy text of the arm's measured traffic."""
    assert live.traffic is not None
    return {r["prompt"]: r["text"] for r in live.traffic.responses}


def _share_the_baseline(request: Any, live: LiveArm) -> None:
    """The no-speculation arm's greedy outputs become the session's baseline (conftest `sglang_baseline`),
    so that no extra server is started for it when test_sglang_nospec.py ran first."""
    if live.arm == "nospec":
        store = request.getfixturevalue("sglang_greedy_texts")
        if not store:
            store.update(greedy_texts(live))


SGLANG = Engine(
    name="sglang", record_prefix="sglang-", python_fixture="sglang_python", models_fixture="sglang_models",
    launch=start_sglang, traffic=send_measured_traffic, acceptance=acceptance_between,
    window_seconds=SLIDING_WINDOW_SECONDS, ready_timeout=420.0, counts_from_zero=False, settles_late=True,
    after_traffic=_read_side, on_measured=_share_the_baseline,
)


def arm_fixture(arms: str | Sequence[str], **launch: Any) -> Any:
    """`harness.arm_fixture` for SGLang arms: the module-scoped `live` fixture."""
    return harness_arm_fixture(SGLANG, arms, **launch)


def no_speculation_texts(python: Path, model_dir: Path, log_dir: Path) -> dict[str, str]:
    """prompt -> greedy text of the measured traffic on a no-speculation server started (and stopped) here."""
    eng = start_sglang("nospec", model_dir, python, log_dir, tag="baseline")
    try:
        eng.wait_ready(SGLANG.ready_timeout)
        responses = eng.generate_traffic(TRAFFIC_REQUESTS, TRAFFIC_MAX_TOKENS)
    finally:
        eng.stop()
    return {r["prompt"]: r["text"] for r in responses}


_SWA_CHOSEN = re.compile(r"Use sliding window memory pool\. full_layer_tokens=(\d+), swa_layer_tokens=(\d+)")
_SWA_USAGE = re.compile(r"SWAKVPool mem usage: ([0-9.]+) GB, swa size: (\d+), full size: (\d+)")
_SWA_DISABLED = re.compile(r"Disable hybrid SWA memory for (\S+) as it is not yet supported")
_POOL_END = "Memory pool end. avail mem="
_MEM_FRACTION = re.compile(r"'mem_fraction_static': ([0-9.]+)")
_KV_SIZES = re.compile(r"KV Cache is allocated\. dtype: \S+, #tokens: (\d+), K size: ([0-9.]+) GB, V size: ([0-9.]+) GB")


@dataclass(frozen=True)
class PoolLog:
    """How SGLang sized its KV pools, from its start-up log (the lines it prints once the pools exist).

    `swa`: (full tokens, SWA tokens, mem usage GB) of its hybrid sliding-window pool ("SWAKVPool mem usage");
    None when it built one uniform pool. `swa_disabled_for`: the architecture SGLang names when it turns a
    sliding-window model's hybrid pool off ("Disable hybrid SWA memory for X as it is not yet supported").
    `swa_from_budget`: (full, SWA) tokens its HybridSWAPoolConfigurator solved from the memory budget ("Use sliding
    window memory pool"), logged before `--max-total-tokens` caps them: the memory side even on a capped launch.
    """

    memory: StartupMemory
    mem_fraction_static: float  # as SGLang resolved it (its server_args line): the budget's m
    kv_tokens: tuple[int, ...]  # every "KV Cache is allocated ... #tokens: N" (a hybrid SWA pool: full, then SWA)
    kv_sizes: tuple[tuple[int, float, float], ...]  # the same lines' (tokens, K GB, V GB), 2 decimals
    swa: tuple[int, int, float] | None
    swa_from_budget: tuple[int, int] | None
    swa_disabled_for: str | None

    @classmethod
    def parse(cls, text: str) -> PoolLog:
        usage, off = _SWA_USAGE.search(text), _SWA_DISABLED.search(text)
        chosen = _SWA_CHOSEN.search(text)
        fraction = _MEM_FRACTION.search(text)
        if fraction is None:
            raise AssertionError("SGLang's log has no server_args line with mem_fraction_static")
        return cls(memory=startup_memory(text), mem_fraction_static=float(fraction[1]),
                   kv_tokens=tuple(int(x) for x in _KV.findall(text)),
                   kv_sizes=tuple((int(n), float(k), float(v)) for n, k, v in _KV_SIZES.findall(text)),
                   swa=None if usage is None else (int(usage[3]), int(usage[2]), float(usage[1])),
                   swa_from_budget=None if chosen is None else (int(chosen[1]), int(chosen[2])),
                   swa_disabled_for=None if off is None else off[1])

    @property
    def budget_bytes(self) -> int:
        """The KV budget SGLang logs (StartupMemory.available_bytes, the middle of its rounding band)."""
        return self.memory.available_bytes(self.mem_fraction_static)[1]


def wait_for_pools(eng: SGLangProcess, timeout: float, poll: float = 1.0, workers: int = 1) -> PoolLog:
    """Wait (bounded) until SGLang logs "Memory pool end" `workers` times (2 with a drafter: its draft worker
    sizes its pool after the target's) and return how it sized its pools.

    For shapes the CPU build sizes but cannot serve (it fails later, in warm-up): the pools are SGLang's own
    sizing on a real start even when the server never becomes ready. Raises with the log's tail if the
    process exits first or `timeout` passes.
    """
    deadline = time.monotonic() + timeout
    while True:
        text = eng.log_path.read_text(errors="replace")
        if text.count(_POOL_END) >= workers:
            return PoolLog.parse(text)
        if eng.popen.poll() is not None or time.monotonic() > deadline:
            why = "exited" if eng.popen.poll() is not None else f"did not size its pools in {timeout:.0f} s"
            raise AssertionError(f"SGLang ({eng.arm}) {why}; log {eng.log_path}:\n{text[-2000:]}")
        time.sleep(poll)
