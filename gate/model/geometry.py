"""KV-cache geometry from a Hugging Face config.json (design.md, "KV geometry").

Why here: the kv_pool budget line, `specgate kv` and `specgate budget` must all agree on
how many bytes one token costs, which layers grow with context and which do not, and
how a drafter's context scope changes what it needs versus what an engine charges.

Per layer and token, b = KV dtype bytes, H_kv_rank = max(1, H_kv // TP), d = head_dim:
  full attention / GQA / MHA  2 · H_kv_rank · d · b
  MLA (kv_lora_rank)          (kv_lora_rank + qk_rope_head_dim) · b   (not divided by TP)
  sliding window              as full attention, held tokens capped at the window
  linear attention / Mamba    a constant state per sequence, no per-token growth
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gate.model.config import ConfigError, ConfigLike, as_model_config, mtp_layers, require_int, text_of
from gate.model.dtypes import DTYPE_BYTES, canonical_dtype

# Layer kinds. "full_attention" and "mla" grow with every token; "sliding_attention" grows
# up to its window; "linear_attention" / "mamba" hold a constant state; "none" holds nothing
# (MLP-only layers of some hybrids); "mtp" marks a target's next-n layers (the drafter's).
GROWING_KINDS = ("full_attention", "mla")
ATTENTION_KINDS = ("full_attention", "mla", "sliding_attention")
STATE_KINDS = ("linear_attention", "mamba")

Scope = Literal["full", "window", "block"]
SCOPES: tuple[str, ...] = ("full", "window", "block")


@dataclass(frozen=True)
class LayerKind:
    """What one layer keeps per sequence: bytes per token, its window cap, or a constant state."""

    index: int
    kind: str
    bytes_per_token: int = 0
    window: int | None = None
    state_bytes: int | None = None


@dataclass(frozen=True)
class HeadShape:
    """The attention heads one token's KV is made of, per TP rank (None where the layout has none)."""

    num_key_value_heads: int | None = None
    kv_heads_per_rank: int | None = None
    head_dim: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    window: int | None = None
    state_dtype: str | None = None


@dataclass(frozen=True)
class KVGeometry:
    """KV bytes of one model (per TP rank), split by what grows with context and what does not.

    `layers` is the one fact; `breakdown()` is a view of it (the `specgate kv` JSON), and
    `view` says whose geometry it is: a config's, or a target's MTP layers seen as the drafter.
    """

    bytes_per_token: int
    num_layers: int
    dtype: str
    tp: int
    layers: tuple[LayerKind, ...] = ()
    dtype_bytes: int = 2
    mtp_layers: int = 0
    mtp_bytes_per_token_per_layer: int = 0
    heads: HeadShape = field(default_factory=HeadShape)
    view: Literal["config", "mtp_head"] = "config"

    def breakdown(self) -> dict[str, Any]:
        """Per-kind bytes: growing layers (full, MLA), sliding layers with their window cap, per-sequence
        state of linear/Mamba layers, MLP-only layers, and a target's MTP layers (the drafter's)."""
        h = self.heads
        out: dict[str, Any] = {"dtype": self.dtype, "dtype_bytes": self.dtype_bytes, "tp": self.tp,
                               "num_layers": self.num_layers}
        if self.view == "config":
            out.update(num_key_value_heads=h.num_key_value_heads, kv_heads_per_rank=h.kv_heads_per_rank,
                       head_dim=h.head_dim)
        for kind in ("full_attention", "mla", "sliding_attention"):
            group = [x for x in self.layers if x.kind == kind]
            if not group:
                continue
            entry: dict[str, Any] = {
                "layers": len(group),
                "bytes_per_token_per_layer": group[0].bytes_per_token,
                "bytes_per_token": sum(x.bytes_per_token for x in group),
            }
            if kind == "mla" and self.view == "config":
                entry["kv_lora_rank"] = h.kv_lora_rank
                entry["qk_rope_head_dim"] = h.qk_rope_head_dim
            if kind == "sliding_attention":
                entry["window"] = h.window
                entry["max_bytes_per_sequence"] = entry["bytes_per_token"] * (h.window or 0)
            out[kind] = entry
        for kind in STATE_KINDS:
            group = [x for x in self.layers if x.kind == kind]
            if not group:
                continue
            known = all(x.state_bytes is not None for x in group)
            out[kind] = {
                "layers": len(group),
                "state_bytes_per_layer": group[0].state_bytes if known else None,
                "state_bytes_per_sequence": sum(x.state_bytes or 0 for x in group) if known else None,
                "state_dtype": h.state_dtype,
            }
        none_layers = sum(1 for x in self.layers if x.kind == "none")
        if none_layers:
            out["no_cache"] = {"layers": none_layers}
        if self.mtp_layers:
            out["mtp"] = {
                "layers": self.mtp_layers,
                "kind": self.mtp_kind,
                "bytes_per_token_per_layer": self.mtp_bytes_per_token_per_layer,
                "bytes_per_token": self.mtp_bytes_per_token,
                "note": "MTP layers belong to the drafter; not counted in bytes_per_token",
            }
        return out

    @property
    def mtp_kind(self) -> str:
        """The attention kind of the target's MTP layers: MLA when the target is MLA, else full attention."""
        return "mla" if self.heads.kv_lora_rank is not None else "full_attention"

    @property
    def attention_bytes_per_token(self) -> int:
        """Per-token bytes of every attention layer, sliding ones included (MTP layers excluded)."""
        return sum(x.bytes_per_token for x in self.layers if x.kind in ATTENTION_KINDS)

    @property
    def state_bytes_per_sequence(self) -> int | None:
        """Constant per-sequence state of linear/Mamba layers; None when a layer's state is not computable."""
        total = 0
        for x in self.layers:
            if x.kind in STATE_KINDS:
                if x.state_bytes is None:
                    return None
                total += x.state_bytes
        return total

    @property
    def mtp_bytes_per_token(self) -> int:
        """Per-token bytes of all the target's MTP layers (charged to the drafter, not the target)."""
        return self.mtp_layers * self.mtp_bytes_per_token_per_layer


def _int_field(t: dict[str, Any], key: str, default: int | None = None) -> int | None:
    value = t.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"config field {key} must be an integer, got {value!r}")
    return value


def _layer_type_kind(value: Any, index: int) -> str:
    name = str(value).lower()
    if "sliding" in name or "chunked" in name or name in ("local", "local_attention"):
        return "sliding_attention"
    if any(w in name for w in ("linear", "deltanet", "gdn", "lightning")):
        return "linear_attention"
    if "mamba" in name or "ssm" in name:
        return "mamba"
    if name in ("full_attention", "attention", "global", "global_attention", "full"):
        return "full_attention"
    raise ConfigError(f"layer_types[{index}] = {value!r} is not a layer kind specgate knows")


def classify_layers(cfg: ConfigLike) -> list[str]:
    """The kind of every decoder layer, from config.json alone (design.md's rules).

    A layer slides only when `layer_types` says so, by Gemma's pattern, or when
    `sliding_window` is set and `use_sliding_window` is not false; a Qwen3-Next-style
    `full_attention_interval` makes every interval-th layer full and the rest linear.
    """
    t = text_of(cfg)
    n = require_int(t, "num_hidden_layers")
    kinds: list[str]
    layer_types = t.get("layer_types")
    pattern = t.get("hybrid_override_pattern")
    block_types = t.get("layers_block_type")
    interval = _int_field(t, "full_attention_interval")
    sliding_window = t.get("sliding_window")
    model_type = str(t.get("model_type", "")).lower()
    if isinstance(layer_types, list) and layer_types:
        if len(layer_types) != n:
            raise ConfigError(f"layer_types has {len(layer_types)} entries but num_hidden_layers is {n}")
        kinds = [_layer_type_kind(v, i) for i, v in enumerate(layer_types)]
    elif isinstance(pattern, str) and pattern:
        # Nemotron-H: M = Mamba, * = attention, - / E = MLP or MoE only (no cache).
        if len(pattern) != n:
            raise ConfigError(f"hybrid_override_pattern has {len(pattern)} entries but num_hidden_layers is {n}")
        table = {"M": "mamba", "*": "full_attention", "-": "none", "E": "none"}
        try:
            kinds = [table[c] for c in pattern]
        except KeyError as e:
            raise ConfigError(f"hybrid_override_pattern has an unknown layer code {e.args[0]!r}") from None
    elif isinstance(block_types, list) and block_types:
        if len(block_types) != n:
            raise ConfigError(f"layers_block_type has {len(block_types)} entries but num_hidden_layers is {n}")
        kinds = [_layer_type_kind(v, i) for i, v in enumerate(block_types)]
    elif interval:
        if interval < 1:
            raise ConfigError(f"full_attention_interval must be >= 1, got {interval}")
        kinds = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    elif sliding_window is not None and model_type.startswith("gemma2"):
        # Gemma 2: even layers slide, odd layers are global.
        kinds = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]
    elif sliding_window is not None and (
        "sliding_window_pattern" in t or model_type.startswith(("gemma3", "cohere2"))
    ):
        # Gemma 3 / Cohere 2: every pattern-th layer is global, the others slide.
        p = _int_field(t, "sliding_window_pattern", 6 if model_type.startswith("gemma3") else 4) or 1
        kinds = ["full_attention" if (i + 1) % p == 0 else "sliding_attention" for i in range(n)]
    elif sliding_window is not None and t.get("use_sliding_window") is not False:
        max_window_layers = _int_field(t, "max_window_layers")
        if t.get("use_sliding_window") is True and max_window_layers is not None:
            # Qwen2 semantics: layers from max_window_layers on use the window.
            kinds = ["sliding_attention" if i >= max_window_layers else "full_attention" for i in range(n)]
        else:
            kinds = ["sliding_attention"] * n
    else:
        kinds = ["full_attention"] * n
    if t.get("kv_lora_rank") is not None:
        kinds = ["mla" if k == "full_attention" else k for k in kinds]
    return kinds


def _head_dim(t: dict[str, Any]) -> int:
    head_dim = _int_field(t, "head_dim")
    if head_dim:
        return head_dim
    hidden = require_int(t, "hidden_size")
    heads = require_int(t, "num_attention_heads")
    if heads <= 0 or hidden % heads:
        raise ConfigError(f"head_dim absent and hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    return hidden // heads


def _gdn_state_elements(t: dict[str, Any], tp: int) -> int | None:
    """Gated DeltaNet (Qwen3-Next) state per layer: conv state + recurrent state, elements per rank."""
    keys = ("linear_conv_kernel_dim", "linear_key_head_dim", "linear_num_key_heads",
            "linear_num_value_heads", "linear_value_head_dim")
    if any(not isinstance(t.get(k), int) for k in keys):
        return None
    kernel, dk, hk, hv, dv = (t[k] for k in keys)
    hk_rank, hv_rank = max(1, hk // tp), max(1, hv // tp)
    conv_dim = 2 * hk_rank * dk + hv_rank * dv
    return (kernel - 1) * conv_dim + hv_rank * dk * dv


def _mamba2_state_elements(t: dict[str, Any], tp: int) -> int | None:
    """Mamba-2 state per layer (Nemotron-H field names): conv state + SSM state, elements per rank."""
    keys = ("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel")
    if any(not isinstance(t.get(k), int) for k in keys):
        return None
    heads, head_dim, state, groups, kernel = (t[k] for k in keys)
    heads_rank, groups_rank = max(1, heads // tp), max(1, groups // tp)
    conv_dim = heads_rank * head_dim + 2 * groups_rank * state
    return (kernel - 1) * conv_dim + heads_rank * head_dim * state


def _model_dtype(t: dict[str, Any]) -> str:
    raw = t.get("torch_dtype") or t.get("dtype")
    return canonical_dtype(raw) if raw else "bf16"


def kv_geometry(cfg: ConfigLike, dtype: str | None = None, tp: int = 1) -> KVGeometry:
    """Bytes per token (growing layers only) and the per-kind breakdown of one model, per TP rank.

    `dtype` is the KV cache dtype (default: the config's torch_dtype, else bf16). Linear and
    Mamba state is counted in the model dtype (the engines' "auto" state dtype).
    """
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ConfigError(f"tp must be a positive integer, got {tp!r}")
    mc = as_model_config(cfg)
    t = mc.text
    kinds = classify_layers(mc)
    n = len(kinds)
    kv_dtype = canonical_dtype(dtype) if dtype else _model_dtype(t)
    b = DTYPE_BYTES[kv_dtype]
    state_b = DTYPE_BYTES[_model_dtype(t)]

    mla_rank = _int_field(t, "kv_lora_rank")
    n_mtp = mtp_layers(mc)
    needs_heads = any(k in ("full_attention", "sliding_attention") for k in kinds) or (
        n_mtp > 0 and mla_rank is None)
    h_kv = h_kv_rank = d = None
    per_full = per_mla = 0
    if needs_heads:
        h_kv = _int_field(t, "num_key_value_heads") or require_int(t, "num_attention_heads")
        h_kv_rank = max(1, h_kv // tp)
        d = _head_dim(t)
        per_full = 2 * h_kv_rank * d * b
    if mla_rank is not None:
        rope = _int_field(t, "qk_rope_head_dim")
        if rope is None:
            raise ConfigError("config has kv_lora_rank (MLA) but no qk_rope_head_dim")
        per_mla = (mla_rank + rope) * b

    window = _int_field(t, "sliding_window") or _int_field(t, "attention_chunk_size")
    gdn = _gdn_state_elements(t, tp)
    mamba = _mamba2_state_elements(t, tp)
    layers: list[LayerKind] = []
    for i, kind in enumerate(kinds):
        if kind == "full_attention":
            layers.append(LayerKind(i, kind, per_full))
        elif kind == "mla":
            layers.append(LayerKind(i, kind, per_mla))
        elif kind == "sliding_attention":
            if window is None:
                raise ConfigError(f"layer {i} is sliding_attention but the config has no sliding_window")
            layers.append(LayerKind(i, kind, per_full, window=window))
        elif kind == "linear_attention":
            layers.append(LayerKind(i, kind, 0, state_bytes=None if gdn is None else gdn * state_b))
        elif kind == "mamba":
            layers.append(LayerKind(i, kind, 0, state_bytes=None if mamba is None else mamba * state_b))
        else:
            layers.append(LayerKind(i, kind, 0))

    per_mtp = per_mla if mla_rank is not None else per_full
    for j in range(n_mtp):
        layers.append(LayerKind(n + j, "mtp", per_mtp))

    bytes_per_token = sum(x.bytes_per_token for x in layers if x.kind in GROWING_KINDS)
    heads = HeadShape(num_key_value_heads=h_kv, kv_heads_per_rank=h_kv_rank, head_dim=d, kv_lora_rank=mla_rank,
                      qk_rope_head_dim=t.get("qk_rope_head_dim") if mla_rank is not None else None,
                      window=window, state_dtype=_model_dtype(t))
    return KVGeometry(
        bytes_per_token=bytes_per_token,
        num_layers=n,
        dtype=kv_dtype,
        tp=tp,
        layers=tuple(layers),
        dtype_bytes=b,
        mtp_layers=n_mtp,
        mtp_bytes_per_token_per_layer=per_mtp if n_mtp else 0,
        heads=heads,
    )


def mtp_drafter_geometry(target: KVGeometry) -> KVGeometry:
    """A target's MTP layers seen as the drafter: each holds one full-context KV entry per token."""
    if not target.mtp_layers:
        raise ConfigError("the target has no MTP layers (num_nextn_predict_layers / mtp_num_hidden_layers)")
    kind = target.mtp_kind
    layers = tuple(LayerKind(i, kind, target.mtp_bytes_per_token_per_layer) for i in range(target.mtp_layers))
    return KVGeometry(
        bytes_per_token=target.mtp_bytes_per_token,
        num_layers=target.mtp_layers,
        dtype=target.dtype,
        tp=target.tp,
        layers=layers,
        dtype_bytes=target.dtype_bytes,
        heads=target.heads,
        view="mtp_head",
    )


def _check_scope(scope: str) -> None:
    if scope not in SCOPES:
        raise ConfigError(f"drafter kv scope must be one of full|window|block, got {scope!r}")


def drafter_kv_bytes_per_token(geom: KVGeometry, scope: Scope = "full") -> int:
    """Bytes one held token costs across all the drafter's attention layers.

    Every drafter attention layer (sliding ones included) stores each token it holds; the
    scope changes how many tokens are held (see `drafter_context_tokens`), not the rate.
    For a target's MTP head pass `mtp_drafter_geometry(target)`.
    """
    _check_scope(scope)
    return geom.attention_bytes_per_token


def drafter_context_tokens(scope: Scope, request_tokens: int, *, window: int | None = None,
                           sink: int = 0, block_size: int | None = None) -> int:
    """Tokens the drafter must hold for one request of `request_tokens` tokens (its geometric need).

    full: every token (MTP, EAGLE, draft models); window: window + sink tokens (Windowed-MTP),
    never more than the request; block: one block of `block_size` tokens (DSpark, seed 002).
    """
    _check_scope(scope)
    if request_tokens < 0:
        raise ValueError("request_tokens must not be negative")
    if scope == "full":
        return request_tokens
    if scope == "window":
        if window is None or window < 1:
            raise ConfigError("drafter kv scope 'window' needs a positive window size")
        return min(request_tokens, window + max(0, sink))
    if block_size is None or block_size < 1:
        raise ConfigError("drafter kv scope 'block' needs a positive block_size")
    return block_size
