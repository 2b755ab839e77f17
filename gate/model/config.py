"""Reading Hugging Face config.json files and telling what kind of drafter one is.

The gate's static checks (KV geometry, co-design) work from config.json alone, so the
rules for finding the text model inside a wrapper config and for naming a drafter's
family live here, in one place, instead of in each check. A config is resolved once per
evaluation (`ModelConfig.of`, in gate.bill.facts); every function here also takes a plain
dict (`specgate kv`, `specgate codesign`) and resolves it then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from gate.status import InputError

# Keys of a target config that say it carries its own MTP (next-n) layers.
MTP_LAYER_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")
# Drafter families whose head reads the target's hidden states at chosen layers (the co-design line checks the taps).
HYBRID_TAP_FAMILIES: frozenset[str] = frozenset({"eagle3", "dflash", "dspark"})


class ConfigError(InputError):
    """A config that cannot be used: the message is one line, fit for `specgate: error: ...`."""


def resolve_text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The text model's config, with the wrapper's own keys as fallbacks.

    Multimodal and omni models keep their decoder in `text_config` or
    `thinker_config.text_config`; speculators drafters keep theirs in
    `transformer_layer_config`. Keys of the inner config win; wrapper keys such as
    `torch_dtype`, `draft_vocab_size` or `speculators_config` stay visible.
    """
    inner: Any = None
    nested_key: str | None = None
    thinker = cfg.get("thinker_config")
    if isinstance(thinker, dict) and isinstance(thinker.get("text_config"), dict):
        inner, nested_key = thinker["text_config"], "thinker_config"
    elif isinstance(cfg.get("text_config"), dict):
        inner, nested_key = cfg["text_config"], "text_config"
    elif isinstance(cfg.get("transformer_layer_config"), dict):
        inner, nested_key = cfg["transformer_layer_config"], "transformer_layer_config"
    if inner is None:
        return dict(cfg)
    merged = {k: v for k, v in cfg.items() if k != nested_key}
    # A wrapper's null must not hide the inner value, and an inner value wins otherwise.
    for k, v in inner.items():
        if v is not None or k not in merged:
            merged[k] = v
    return merged


@dataclass(frozen=True)
class ModelConfig:
    """A config.json as read (`raw`: wrapper keys such as `architectures` or `eagle_config`) and its
    text model resolved once (`text`: what the geometry and the co-design rules read)."""

    raw: dict[str, Any]
    text: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> ModelConfig:
        return cls(raw, resolve_text_config(raw))


ConfigLike: TypeAlias = ModelConfig | dict[str, Any]


def as_model_config(cfg: ConfigLike) -> ModelConfig:
    """The resolved config: as given when it already is one, else resolved now."""
    return cfg if isinstance(cfg, ModelConfig) else ModelConfig.of(cfg)


def text_of(cfg: ConfigLike) -> dict[str, Any]:
    return cfg.text if isinstance(cfg, ModelConfig) else resolve_text_config(cfg)


def raw_of(cfg: ConfigLike) -> dict[str, Any]:
    return cfg.raw if isinstance(cfg, ModelConfig) else cfg


def require_int(cfg: dict[str, Any], key: str, what: str = "config") -> int:
    """An integer field the computation cannot go without (ConfigError names the field)."""
    value = cfg.get(key)
    if value is None:
        raise ConfigError(f"{what} has no {key}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} field {key} must be an integer, got {value!r}")
    return value


def num_hidden_layers(cfg: ConfigLike, what: str = "config") -> int:
    """`num_hidden_layers` of the resolved text config; a config without it is unusable here."""
    n = require_int(text_of(cfg), "num_hidden_layers", what)
    if n < 0:
        raise ConfigError(f"{what} field num_hidden_layers must not be negative, got {n}")
    return n


def mtp_layers(cfg: ConfigLike) -> int:
    """How many MTP (next-n) layers a target config carries (0 when none)."""
    text = text_of(cfg)
    for key in MTP_LAYER_KEYS:
        value = text.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def _architectures(cfg: dict[str, Any]) -> list[str]:
    archs = cfg.get("architectures") or []
    if isinstance(archs, str):
        archs = [archs]
    return [a for a in archs if isinstance(a, str)]


def drafter_family(drafter: ConfigLike | None, target_cfg: ConfigLike | None = None) -> str:
    """One of eagle3 | dflash | dspark | mtp | draft_model.

    Detection order (design.md): `architectures`, `eagle_config`, `dflash_config`,
    `speculators_config`, an MTP `model_type`, a reduced draft vocabulary (`reduced_draft_vocab`:
    SafeAILab's EAGLE-3 training layout); with no drafter config, the target's
    `num_nextn_predict_layers` / `mtp_num_hidden_layers`. Anything else that is a causal
    LM is a plain draft model.
    """
    if drafter is None:
        if target_cfg is not None and mtp_layers(target_cfg) > 0:
            return "mtp"
        raise ConfigError("no drafter config, and the target has no MTP layers "
                          "(num_nextn_predict_layers / mtp_num_hidden_layers)")
    drafter_cfg = raw_of(drafter)
    archs = [a.lower() for a in _architectures(drafter_cfg)]
    joined = " ".join(archs)
    if "dspark" in joined:
        return "dspark"
    if "dflash" in joined:
        return "dflash"
    if "eagle3" in joined:
        return "eagle3"
    if isinstance(drafter_cfg.get("eagle_config"), dict) or "eagle_aux_hidden_state_layer_ids" in drafter_cfg:
        return "eagle3"
    dflash_cfg = drafter_cfg.get("dflash_config")
    if isinstance(dflash_cfg, dict):
        return "dspark" if str(dflash_cfg.get("projector_type", "")).lower() == "dspark" else "dflash"
    spec = drafter_cfg.get("speculators_config")
    algorithm = ""
    if isinstance(spec, dict):
        algorithm = str(spec.get("algorithm", "")).lower()
    algorithm = algorithm or str(drafter_cfg.get("speculators_model_type", "")).lower()
    if algorithm in ("eagle3", "dflash", "dspark", "mtp"):
        return algorithm
    model_type = str(drafter_cfg.get("model_type", "")).lower()
    if model_type.endswith("_mtp") or model_type.endswith("nextn") or "mtp" in joined or "nextn" in joined:
        return "mtp"
    if reduced_draft_vocab(drafter_cfg):
        return "eagle3"
    return "draft_model"


def reduced_draft_vocab(cfg: dict[str, Any]) -> bool:
    """`draft_vocab_size` below `vocab_size` (both positive integers): an EAGLE-3 head's reduced output vocabulary.

    Why it names the family: SafeAILab's EAGLE-3 trainer writes a plain 1-layer `LlamaForCausalLM` config
    with `draft_vocab_size` 32,000 < `vocab_size` 128,256 (SafeAILab/EAGLE eagle/traineagle3/config.json;
    tests/fixtures/configs/eagle3-safeailab__SafeAILab__EAGLE-traineagle3.json), which vLLM serves under
    `method: eagle3` by renaming the architecture (vllm/transformers_utils/configs/eagle.py:55-62 in 0.32:
    LlamaForCausalLM → Eagle3LlamaForCausalLM) and whose d2t tensor maps the draft vocabulary back. A plain
    draft model has its own full vocabulary and no such key, so the marker does not name one.
    """
    dvs, vs = cfg.get("draft_vocab_size"), cfg.get("vocab_size")
    if not (isinstance(dvs, int) and isinstance(vs, int)) or isinstance(dvs, bool) or isinstance(vs, bool):
        return False
    return 0 < dvs < vs
