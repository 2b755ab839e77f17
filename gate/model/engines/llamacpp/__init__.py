"""llama.cpp's gate-side profile (`llama-server` b11434): what the gate's lines, bill, init and controller use.

Sources, all llama.cpp b11434 (the tree tools/llamacpp_cpu.sh builds):
- depth: `--spec-draft-n-max` (common/arg.cpp; `common_params_speculative_draft.n_max`, default 3) is the
  most draft tokens a round proposes; the plan spells it `num_speculative_tokens`. The draft model stops a
  round early when its token's probability falls below `--spec-draft-p-min` (default 0: never), and the
  n-gram types draft what matches, so a round drafts up to k. The per-position counter has exactly k
  positions (`common_speculative_n_max`).
- drafter passes: `draft-simple` runs the draft model once per drafted token (a chain of up to k; fewer when a
  round stops at `--spec-draft-p-min`): k is the bound the cost model uses (`BaseProfile`'s defaults for k and
  the passes).
- names: `--spec-type` (common/speculative.cpp `common_speculative_type_from_name_map`), reported by `/props`
  `default_generation_settings.params["speculative.types"]` (the exporter's `speculative` algorithm).
- the drafter's KV: `common_base_params_to_speculative` copies the server's parameters into the draft
  context, so the draft model gets a context of its own with the target's `--ctx-size` cells and the same
  slots, its cache in `--spec-draft-type-k/-v` (default f16, not the target's `--cache-type-k/-v`): per target
  token the drafter holds one cell of its own geometry, beside (not inside) the target's cache. The cells:
  `common_speculative_init_result`'s `cparams.n_ctx = llama_n_ctx(ctx_tgt)` ("the draft context holds as many
  tokens per sequence as the target context"; common/speculative.cpp, read at ggml-org/llama.cpp 001d906a: the
  b11434 tree kept here has only the converter). So a request's drafter KV is its cells × the draft's bytes
  per cell whatever the drafter's scope, sized from the draft's own geometry: never under-reserved
  (`drafter_kv_basis`).
- the pool: llama.cpp does not size the cache from a memory budget. It allocates `--ctx-size` cells (split
  over `--parallel` slots), whatever the memory; a cache that does not fit fails the launch. So the predicted
  pool is the plan's `configured_max_total_tokens` (= `--ctx-size`) with or without a drafter.
- block drafters: `common_speculative_impl_draft_dflash` clamps `--spec-draft-n-max` at start-up to what the
  trained block holds ("DFlash input is [id_last, <mask> * (block_size-1)]: in-place denoising yields at most
  block_size-1 draft tokens, anchor-first DSpark yields a full block_size"; it logs "requested draft size ...
  clamping to N"; common/speculative.cpp at 001d906a, the same line in the b11434 binary): `block_round`, held
  against llama-server by tests/fixtures/oracle/llamacpp-11434-spec.json (blocks 4 and 8, k below, at and above).
- llama.cpp numbers builds, not releases: no version floor is known to matter.
- no memory fraction, no block size (cells are single tokens), no tap ids (EAGLE-3 heads are converted to
  GGUF with their own taps), MTP via `draft-mtp`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from gate.model.engines.base import (
    BaseProfile,
    DepthKeys,
    Eagle3Taps,
    OwnKeysPool,
    PoolPrediction,
    Rule,
    block_or_user_depth,
)
from gate.model.geometry import KVGeometry
from gate.status import Status

# The `--spec-type` each plan method is launched with.
LAUNCH_TYPE: Mapping[str, str] = MappingProxyType({
    "draft_model": "draft-simple", "eagle3": "draft-eagle3", "mtp": "draft-mtp", "nextn": "draft-mtp",
    "dflash": "draft-dflash", "dspark": "draft-dspark", "ngram": "ngram-simple"})
# The `speculative.types` names (upper case) that run each plan method.
REPORTED_TYPES: Mapping[str, frozenset[str]] = MappingProxyType({
    "draft_model": frozenset({"DRAFT-SIMPLE"}), "eagle3": frozenset({"DRAFT-EAGLE3"}),
    "mtp": frozenset({"DRAFT-MTP"}), "nextn": frozenset({"DRAFT-MTP"}),
    "dflash": frozenset({"DRAFT-DFLASH"}), "dspark": frozenset({"DRAFT-DSPARK"}),
    "ngram": frozenset({"NGRAM-SIMPLE", "NGRAM-MAP-K", "NGRAM-MAP-K4V", "NGRAM-MOD", "NGRAM-CACHE"})})


def block_round(family: str, block_size: int, depth: int | None) -> int:
    """The tokens one round of a block drafter proposes at `--spec-draft-n-max` `depth` (None: the most it can):
    DFlash denoises `[id_last, mask * (block_size - 1)]`, so block_size - 1 (position 0 is the anchor, the last
    verified token); DSpark samples from the anchor, so block_size. llama.cpp clamps a deeper k to that at
    start-up. Why one function: `block_rule`, `block_depth_keys` and the oracle replay all ask it. (A DSpark GGUF
    written with `dflash.sample_from_anchor` false drafts block_size - 1; only Gemma-4 DSpark converts one, and
    its config says so: not read here.)"""
    most = block_size if family == "dspark" else block_size - 1
    return most if depth is None else min(depth, most)


@dataclass(frozen=True)
class LlamacppProfile(BaseProfile):
    kind: str = "llamacpp"
    name: str = "llama.cpp"
    speculative_flag_prefixes: tuple[str, ...] = ("--spec-", "--spec_")
    default_memory_fraction: float | None = 1.0
    memory_fraction_note: str = ("llama.cpp has no memory fraction: the whole GPU (× 1.0); its KV is --ctx-size cells "
                                 "(engine.ctx_size), whatever the memory, and a launch that does not fit fails")
    kv_pool_note: str = " (llama.cpp's draft model keeps a context of its own, --ctx-size cells of its own KV)"
    draft_kv_note: str = ("llama.cpp gives the draft model a context of its own with the target's --ctx-size cells "
                          "and slots (common_base_params_to_speculative), its KV in --spec-draft-type-k/-v "
                          "(default f16): one drafter cell per target token, beside the target's cache")
    init_block_size_comment: str = "llama.cpp has no block size (a KV cell is one token): leave unset"
    init_memory_fraction_comment: str = ("llama.cpp has no memory fraction: its KV is engine.ctx_size cells "
                                         "(--ctx-size), whatever the memory")
    # llama-server's own memory keys, as `specgate init` writes them (instead of a byte budget and a fraction).
    init_memory_lines: tuple[str, ...] = (
        "  ctx_size: null  # TODO: --ctx-size, the KV cells of all slots (the draft model gets as many of its own)",
        "  parallel: null  # --parallel slots (null: auto, 4 slots sharing one unified cache)",
        "  cache_type_k: f16  # -ctk (llama-server's default f16; q8_0 about halves the K cache)",
        "  cache_type_v: f16  # -ctv",
    )

    def algorithms(self, method: str) -> frozenset[str] | None:
        return REPORTED_TYPES.get(method)

    def predict_pool(self, *, kv_cache_memory_bytes: int, target_bytes_per_token: int, draft_charge: int | None,
                     has_drafter: bool, block_size: int | None,
                     configured_max_total_tokens: int | None) -> PoolPrediction:
        """The pool is `--ctx-size` (the plan's configured_max_total_tokens), not a share of memory; the
        drafter's cells live in its own context and take none of the target's."""
        ctx = configured_max_total_tokens
        if ctx is None:
            return PoolPrediction(None, None, None, notes=(
                "llama.cpp allocates --ctx-size cells, not a memory share: engine.configured_max_total_tokens "
                "(= --ctx-size) not given, so no predicted pool",))
        notes = [f"llama.cpp: pool = --ctx-size = {ctx:,} cells (split over --parallel slots), with or without a "
                 "drafter (the draft model's cells are its own context)"]
        need = ctx * (target_bytes_per_token + ((draft_charge or 0) if has_drafter else 0))
        if need > kv_cache_memory_bytes:
            notes.append(f"--ctx-size {ctx:,} needs {need:,} B of KV, more than the {kv_cache_memory_bytes:,} B budget: "
                         "llama.cpp would fail to allocate it at launch")
        return PoolPrediction(None, ctx, ctx if (not has_drafter or draft_charge is not None) else None,
                              notes=tuple(notes))

    def draft_charge(self, method: str | None, target: KVGeometry, drafter: KVGeometry) -> tuple[int, str | None]:
        """Per target token the draft context holds one cell of its full-attention layers (its sliding layers are
        a fixed cache, `server_cache`): the same basis as the target's bytes per token and `specgate kv`."""
        swa = sum(1 for x in drafter.layers if x.kind == "sliding_attention")
        if not swa:
            return drafter.bytes_per_token, None
        return drafter.bytes_per_token, (
            f"llama.cpp: the draft model's {swa} sliding-window layer(s) are a fixed cache of their window per slot, "
            f"not per token: {drafter.bytes_per_token:,} B/token is its full-attention layers (as `specgate kv`)")

    def drafter_kv_basis(self, *, request_tokens: int, need_tokens: int, need_bytes_per_token: int,
                         charge_bytes_per_token: int) -> tuple[int, int, str]:
        """Every cell of the request in the draft model's own context ("own_context"), at `draft_charge`'s bytes
        per cell: the context mirrors the target's cells (n_ctx = the target's) whatever the drafter's scope, and
        is sized from the draft's own geometry, so what it needs is what llama.cpp reserves. Its sliding layers'
        fixed window cache is the memory bill's (`server_cache`), not a per-request need."""
        return request_tokens, charge_bytes_per_token, "own_context"

    def own_keys_pool(self, engine: Mapping[str, Any], target: KVGeometry, drafter: KVGeometry | None,
                      has_drafter: bool) -> OwnKeysPool:
        """`--ctx-size` cells with or without the draft model (its cells are a context of its own), and the KV
        bytes of both contexts on one basis (`server_cache`), predicted; each request gets --ctx-size / --parallel
        cells, or the whole unified cache when --parallel is auto."""
        ctx, parallel = engine.get("ctx_size"), engine.get("parallel")
        if not isinstance(ctx, int):
            return OwnKeysPool(PoolPrediction(None, None, None, notes=(
                "llama.cpp allocates --ctx-size cells, not a memory share: engine.ctx_size not given, so no "
                "predicted pool",)), None, None)
        kt, vt = str(engine.get("cache_type_k") or "f16"), str(engine.get("cache_type_v") or "f16")
        t = server_cache(target, ctx, parallel, kt, vt)
        d = server_cache(drafter, ctx, parallel) if drafter is not None and has_drafter else None  # --spec-draft-type f16
        slots = f"{parallel} slot(s), split" if parallel else f"auto: {AUTO_PARALLEL} slots, one unified cache"
        notes = [f"llama.cpp: pool = --ctx-size = {t.ctx_cells:,} cells ({slots}), with or without a drafter (the "
                 f"draft model's cells are its own context); predicted KV: target {t.ctx_cells:,} × "
                 f"{t.per_token_bytes:,} B ({kt}/{vt})"
                 + (f" + sliding-window cache {t.swa_cells:,} cells = {t.swa_bytes:,} B" if t.swa_bytes else "")
                 + (f"; drafter {d.ctx_cells:,} × {d.per_token_bytes:,} B"
                    + (f" + sliding-window cache {d.swa_cells:,} cells = {d.swa_bytes:,} B" if d.swa_bytes else "")
                    if d is not None else "")]
        kv = t.total_bytes + (d.total_bytes if d is not None else 0)
        if has_drafter and drafter is None:
            notes.append("the draft model's geometry is unknown: its KV is not in the predicted bytes")
        cap = t.ctx_cells // parallel if parallel else t.ctx_cells
        return OwnKeysPool(PoolPrediction(None, t.ctx_cells, t.ctx_cells if (not has_drafter or drafter is not None)
                                          else None, notes=tuple(notes)),
                           kv if (not has_drafter or d is not None) else None, cap)

    def eagle3_taps(self, ids: list[int], num_layers: int) -> Eagle3Taps:
        """The converted EAGLE-3 GGUF carries its taps as the HF config named them (ids = layer outputs
        captured by the target, as SGLang's convention)."""
        L = num_layers
        return Eagle3Taps(L - 1, f"llama.cpp convention: id k = output of layer k, ids in [0, L-1] = [0, {L - 1}]",
                          tuple(k for k in ids if 0 <= k <= L - 1))

    def block_rule(self, family: str, block_size: int, depth: int | None) -> Rule:
        """A round drafts what the block holds (`block_round`): a deeper --spec-draft-n-max runs, clamped, so it
        warns with the k the engine drafts; a block that holds no draft token never speculates (fail)."""
        most = block_round(family, block_size, None)
        holds = f"block_size {block_size}" + (f" - 1 = {most}" if most < block_size else "")
        if most < 1:
            return Rule(Status.FAIL, f"llama.cpp {family}: a round drafts {holds} tokens: it never speculates")
        if depth is None:
            return Rule(Status.PASS, f"llama.cpp {family}: a round drafts up to {holds} tokens in one pass")
        if depth > most:
            return Rule(Status.WARN, f"llama.cpp {family}: --spec-draft-n-max {depth} exceeds {holds}, the most a "
                                     f"round drafts: llama.cpp clamps it to {most}")
        return Rule(Status.PASS, f"llama.cpp {family}: --spec-draft-n-max {depth} <= {holds}")

    def mtp_rule(self, mtp_layers: int, depth: int | None) -> Rule:
        return Rule(Status.PASS, f"target has {mtp_layers} MTP layer(s); llama.cpp's draft-mtp runs them for any "
                                 "--spec-draft-n-max")

    def draft_vocabulary_rule(self, method: str | None, target: Mapping[str, Any], drafter: Mapping[str, Any],
                              declared_target: Mapping[str, Any] | None,
                              declared_drafter: Mapping[str, Any] | None) -> Rule | None:
        """draft-simple's own check (`common_speculative_are_compatible`, below), not equal sizes: Gemma-3's
        262,208 tokens against a 262,144-token draft is 64 apart and runs. The other methods load heads
        that share the target's vocabulary by construction: the generic rule."""
        if method not in (None, "draft_model"):
            return None
        return vocabulary_rule(vocabulary_of(target, declared_target), vocabulary_of(drafter, declared_drafter))

    def draft_vocabulary_omitted(self, method: str | None, config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        """What `common_speculative_are_compatible` compares and the config does not say (the GGUF does)."""
        if method not in (None, "draft_model"):
            return ()
        v = vocabulary_of(config)
        return tuple((key, why) for key, value, why in (
            ("vocab_size", v.size, "the GGUF's vocabulary size (llama.cpp: draft and target within 128 tokens)"),
            ("vocab_type", v.type, "the GGUF's tokenizer.ggml.model as llama.cpp names it: llama = SPM, gpt2 = BPE"),
            ("bos_token_id", v.bos_token_id, "the GGUF's tokenizer.ggml.bos_token_id (llama.cpp: equal in both)"),
            ("eos_token_id", v.eos_token_id, "the GGUF's tokenizer.ggml.eos_token_id, one id (equal in both)"))
            if value is None)

    def block_depth_keys(self, method: str, block_size: int, depth: int | None) -> DepthKeys:
        """The user's k, else the most a round drafts (`block_round`: DFlash block_size - 1, DSpark block_size)."""
        most = block_round(method, block_size, None)
        return block_or_user_depth(most, depth, f"llama.cpp: --spec-draft-n-max = {most}, the most a {method} round "
                                                f"drafts (the drafter's block_size {block_size})")

    def chain_depth_keys(self, depth: int, why: str) -> DepthKeys:
        return DepthKeys({"num_speculative_tokens": depth}, f"{why}; llama.cpp: --spec-draft-n-max {depth}")

    def speculative_config(self, method: str, model: str | None, *, num_speculative_tokens: int | None,
                           num_steps: int | None, eagle_topk: int | None,
                           num_draft_tokens: int | None) -> dict[str, Any]:
        """`--spec-type`, the draft model's GGUF (`--spec-draft-model`) and k (`--spec-draft-n-max`)."""
        cfg: dict[str, Any] = {"type": LAUNCH_TYPE.get(method, method)}
        if model:
            cfg["draft-model"] = model
        if num_speculative_tokens:
            cfg["draft-n-max"] = num_speculative_tokens
        return cfg

    def speculative_flags(self, cfg: Mapping[str, Any]) -> list[str]:
        """`--spec-<key> value` per key, in the config's order."""
        flags: list[str] = []
        for k, v in cfg.items():
            if v is not None and v is not False:
                flags += [f"--spec-{k}", str(v)]
        return flags


LLAMACPP = LlamacppProfile()


# llama.cpp's draft/target vocabulary rule (common/speculative.cpp `common_speculative_are_compatible`, read at
# ggml-org/llama.cpp 001d906a; draft-simple refuses to start without it): same vocab type, same BOS and EOS
# (when added), sizes within 128 tokens, token texts equal from id 5 up to the smaller size.
SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128
SPEC_VOCAB_CHECK_START_TOKEN_ID = 5


@dataclass(frozen=True)
class Vocabulary:
    """What llama.cpp compares of one model's vocabulary (None: neither the config nor the plan says)."""

    size: int | None = None
    type: str | None = None
    bos_token_id: int | None = None
    eos_token_id: int | None = None


def _id(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def vocabulary_of(config: Mapping[str, Any], declared: Mapping[str, Any] | None = None) -> Vocabulary:
    """A config.json's vocabulary facts (its text config's for a multimodal one), each overridden by the
    plan's declaration (`vocab_size`, `vocab_type`, `bos_token_id`, `eos_token_id`) where the config omits
    it or says it otherwise (a GGUF's vocab type is never in config.json; Gemma 3's size is Transformers'
    default, not written). A list of EOS ids is not llama.cpp's one id: unknown unless declared."""
    tc = config.get("text_config")
    text: Mapping[str, Any] = tc if isinstance(tc, Mapping) else {}
    d: Mapping[str, Any] = declared or {}

    def pick(key: str) -> Any:
        for src in (d, text, config):
            if src.get(key) is not None:
                return src[key]
        return None

    vtype = pick("vocab_type")
    return Vocabulary(_id(pick("vocab_size")), vtype if isinstance(vtype, str) else None,
                      _id(pick("bos_token_id")), _id(pick("eos_token_id")))


def vocabulary_rule(target: Vocabulary, drafter: Vocabulary) -> Rule:
    """`common_speculative_are_compatible` on what configs and plan can say: a fail where llama.cpp refuses,
    inconclusive naming the keys to declare where a fact is missing, pass (compatible by size; the token
    texts from id 5 on are in the GGUFs, not the configs) otherwise."""
    for what, t, d in (("vocab type", target.type, drafter.type), ("BOS id", target.bos_token_id,
                                                                    drafter.bos_token_id),
                       ("EOS id", target.eos_token_id, drafter.eos_token_id)):
        if t is not None and d is not None and t != d:
            return Rule(Status.FAIL, f"llama.cpp refuses the draft: {what} {d} != target {t} "
                                     "(common_speculative_are_compatible)")
    if target.size is not None and drafter.size is not None:
        diff = abs(target.size - drafter.size)
        if diff > SPEC_VOCAB_MAX_SIZE_DIFFERENCE:
            return Rule(Status.FAIL, f"llama.cpp refuses the draft: vocabulary {drafter.size:,} vs target "
                                     f"{target.size:,}, difference {diff} > {SPEC_VOCAB_MAX_SIZE_DIFFERENCE} "
                                     "(SPEC_VOCAB_MAX_SIZE_DIFFERENCE)")
    missing = [f"{who}.vocabulary.{key}" for who, v in (("target", target), ("drafter", drafter))
               for key, value in (("vocab_size", v.size), ("vocab_type", v.type), ("bos_token_id", v.bos_token_id),
                                  ("eos_token_id", v.eos_token_id)) if value is None]
    if missing:
        return Rule(Status.INCONCLUSIVE, "not checked: llama.cpp compares vocab type, BOS/EOS and size (within "
                                         f"{SPEC_VOCAB_MAX_SIZE_DIFFERENCE}); declare in the plan what the configs omit: "
                                         f"{', '.join(missing)}")
    assert target.size is not None and drafter.size is not None
    return Rule(Status.PASS, f"llama.cpp: vocabulary {drafter.size:,} vs target {target.size:,} (difference "
                             f"{abs(target.size - drafter.size)} <= {SPEC_VOCAB_MAX_SIZE_DIFFERENCE}), type "
                             f"{target.type}, BOS {target.bos_token_id}, EOS {target.eos_token_id} equal; token "
                             f"texts from id {SPEC_VOCAB_CHECK_START_TOKEN_ID} on are compared at start (GGUF)")


# llama-server's memory: no byte budget, no fraction. `--ctx-size` cells (common/arg.cpp; padded to 256) over
# `--parallel` slots; left on auto the server runs 4 slots sharing one unified cache (`--kv-unified`). A model
# with sliding-window layers gets two caches (src/llama-kv-cache-iswa.cpp): the full layers `--ctx-size` cells,
# the sliding ones GGML_PAD(min(n_ctx_seq, n_swa × (unified ? n_seq_max : 1) + n_ubatch), 256) cells per
# stream (n_ubatch default 512), whatever the context. Cache types `-ctk/-ctv` (default f16): bytes per element,
# blocks of 32 for the quantised ones (ggml's type sizes).
AUTO_PARALLEL = 4
N_UBATCH = 512
CTX_PAD = 256
CACHE_TYPE_BYTES: Mapping[str, tuple[int, int]] = MappingProxyType({
    "f32": (4, 1), "f16": (2, 1), "bf16": (2, 1), "q8_0": (34, 32), "q4_0": (18, 32), "q4_1": (20, 32),
    "iq4_nl": (18, 32), "q5_0": (22, 32), "q5_1": (24, 32)})


def _pad(n: int) -> int:
    return -(-n // CTX_PAD) * CTX_PAD


@dataclass(frozen=True)
class ServerCache:
    """One llama-server context's KV (the target's, or the draft model's own) on one basis: bytes per cell of the
    full-attention layers × `--ctx-size` cells, plus the sliding-window layers' fixed cache."""

    ctx_cells: int
    per_token_bytes: int
    swa_cells: int
    swa_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.ctx_cells * self.per_token_bytes + self.swa_bytes


def server_cache(geom: KVGeometry, ctx_size: int, parallel: int | None, cache_type_k: str = "f16",
                 cache_type_v: str = "f16") -> ServerCache:
    """What llama-server allocates for `geom` (its per-token bytes at the geometry's dtype, rescaled to the cache
    types): the full layers hold every cell, each sliding layer its window per slot plus a micro-batch."""
    kb, kd = CACHE_TYPE_BYTES[cache_type_k]
    vb, vd = CACHE_TYPE_BYTES[cache_type_v]

    def at_types(bpt: int) -> int:  # a layer's K+V bytes at the geometry's dtype -> at -ctk/-ctv
        elements = bpt // (2 * geom.dtype_bytes)  # K (= V) elements per token
        return -(-elements * kb // kd) + -(-elements * vb // vd)

    ctx = _pad(ctx_size)
    unified = parallel is None
    n_seq: int = parallel if parallel is not None else AUTO_PARALLEL
    full = sum(at_types(x.bytes_per_token) for x in geom.layers if x.kind in ("full_attention", "mla"))
    swa_cells = swa_bytes = 0
    for x in geom.layers:
        if x.kind != "sliding_attention" or not x.window:
            continue
        cells = (_pad(min(ctx, x.window * n_seq + N_UBATCH)) if unified
                 else n_seq * _pad(min(ctx // n_seq, x.window + N_UBATCH)))
        swa_cells = max(swa_cells, cells)
        swa_bytes += cells * at_types(x.bytes_per_token)
    return ServerCache(ctx, full, swa_cells, swa_bytes)
